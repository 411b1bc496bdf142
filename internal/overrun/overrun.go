// Package overrun counts the goroutines a call leaves running after it
// answered: a body the registry stopped waiting for at its deadline runs
// on (Go cannot stop a goroutine), and a server that bounds the calls in
// flight must keep counting it until it returns.
//
// The registry calls [Begin] with the call's context before it starts a
// body on a goroutine of its own, and the returned done when the body
// returns. A server puts a [Group] in the call's context with [With] and,
// once the call answered, calls [Group.End] with what frees the call's
// place: it runs at once when no body runs on, or when the last returns.
package overrun

import (
	"context"
	"sync"
)

// Group counts the goroutines of one call. Its zero value is ready; it is
// safe for concurrent use.
type Group struct {
	mu      sync.Mutex
	n       int    // goroutines running
	release func() // set by End while n > 0
}

type key struct{}

// With returns ctx carrying g.
func With(ctx context.Context, g *Group) context.Context {
	return context.WithValue(ctx, key{}, g)
}

// Begin counts one goroutine in the group ctx carries, if any, and
// returns the function that counts it out (once; later calls do
// nothing).
func Begin(ctx context.Context) (done func()) {
	g, _ := ctx.Value(key{}).(*Group)
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(g.done) }
}

func (g *Group) done() {
	g.mu.Lock()
	g.n--
	var release func()
	if g.n == 0 && g.release != nil {
		release, g.release = g.release, nil
	}
	g.mu.Unlock()
	if release != nil {
		release()
	}
}

// End runs release now if no goroutine of the group runs, otherwise when
// the last one returns. Call it once, when the call answered.
func (g *Group) End(release func()) {
	g.mu.Lock()
	if g.n > 0 {
		g.release = release
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	release()
}

// Running returns how many goroutines of the group run.
func (g *Group) Running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
