package actions

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
	"sync"
	"time"
)

// Trace is a body's view of its own run: the action it runs, the commands
// it records, and the nested calls it makes. Its methods are safe for
// concurrent use. Once the body has returned, Command records nothing and
// Call runs nothing; a nested call already running when the body returns
// is waited for and recorded, so that every call that runs is in the
// entry.
//
// The registry builds the trace of each call. A test of a body builds one
// with [NewTrace].
type Trace struct {
	action   string
	runner   nestedRunner     // runs the body's nested calls; nil for NewTrace's
	caller   *identity.Caller // who calls: the host's Caller (see Trace.Caller)
	progress *progress        // delivers Progress reports; nil drops them
	// recorded are the steps a replay recorded for this call, whose
	// values (Trace.Value) it gives back; nil on a live run.
	recorded []store.RunStep
	now      func() time.Time // the registry's clock, for Trace.Now

	mu       sync.Mutex
	entry    store.RunEntry
	closing  bool           // the body returned: no new call or command
	inflight sync.WaitGroup // nested calls started before closing
	nested   []*Refusal     // refusals nested calls returned to the body
}

// errTraceClosed is returned by a Trace used after its body returned.
var errTraceClosed = errors.New("actions: the trace's call is over")

// NewTrace returns a trace of the action id that no registry runs, for
// testing a body on its own: pass it (or the environment built on it) to
// the body, then read what the body recorded with [Trace.Steps]. Its Call
// runs nothing: it records a refused step and returns an unknown_action
// refusal.
func NewTrace(action string) *Trace {
	return &Trace{action: action, entry: store.RunEntry{Action: action, Steps: []store.RunStep{}}}
}

// Action returns the id of the action the trace records.
func (t *Trace) Action() string { return t.action }

// Steps returns a deep copy of the steps recorded so far, in order.
func (t *Trace) Steps() []store.RunStep {
	t.mu.Lock()
	defer t.mu.Unlock()
	return cloneEntry(store.RunEntry{Steps: t.entry.Steps}).Steps
}

// Command records a command the body emitted, as emitted, with its result
// (nil for none). Both must have a canonical JSON form; otherwise the step
// is not recorded and a *CanonicalError is returned. A number a double
// does not hold (2^53+1) is recorded with its own digits, as in
// parameters and results (see docs/runlog.md). After the body has
// returned, the step is not recorded either.
func (t *Trace) Command(cmd, result any) error {
	c, err := exactText(cmd)
	if err != nil {
		return err
	}
	step := store.RunStep{Command: json.RawMessage(c)}
	if result != nil {
		r, err := exactText(result)
		if err != nil {
			return err
		}
		step.Result = r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return errTraceClosed
	}
	t.entry.Steps = append(t.entry.Steps, step)
	return nil
}

// Call runs another action through the same registry, as the same caller,
// refs resolved, and records its entry as a step of this one, whether it
// was done or refused. The gate checks the caller for the nested action
// as for a call of its own (surface, capability, scope, serving): a body
// cannot make for its caller a call the caller may not make. A nested
// call counts no rate, and one that needs confirmation is refused
// confirmation_required (not held) unless the outer call is itself a
// confirmation; under an action with [Definition].Preview, whose calls
// are the caller's (a program's), each counts the caller's rate and one
// that needs confirmation holds the whole call instead. See [Trace.CallAsHost] for a call the host makes. It returns the nested body's result, or its error or
// refusal (see [Registry.Run]). Calls nested deeper than
// Limits.MaxCallDepth are refused with constraint_violation. After the
// body has returned, Call runs nothing and returns an error.
//
// A refusal Call returns is the nested action's, not the caller's: when
// the body returns it (as it is or wrapped), the caller of the outer
// action gets an internal refusal, whose [Refusal.Cause] is the nested
// one (see [Registry.Run]); a cancellation stays cancelled. A body that wants to refuse on its own terms
// returns a refusal of its own.
//
// params go through the host's resolver like a caller's: a body that
// passes on a key it received needs a resolver that gives a key back for
// itself (as RefMatches.ID).
func (t *Trace) Call(ctx context.Context, id string, params any) (any, error) {
	return t.call(ctx, id, params, false)
}

// CallAsHost is [Trace.Call] made as the host rather than as the caller:
// the gate lets it through as it lets the host's own calls through. A
// body says so where it must act beyond its caller's rights (an audit
// write, a system account), and the nested entry records it (asHost).
func (t *Trace) CallAsHost(ctx context.Context, id string, params any) (any, error) {
	return t.call(ctx, id, params, true)
}

func (t *Trace) call(ctx context.Context, id string, params any, asHost bool) (any, error) {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		// A call nobody would record must not run either.
		return nil, errTraceClosed
	}
	t.inflight.Add(1)
	var recorded []store.RunStep // on replay, the steps of the nested call recorded here
	if i := len(t.entry.Steps); i < len(t.recorded) && t.recorded[i].Call != nil {
		recorded = t.recorded[i].Call.Steps
	}
	t.mu.Unlock()
	defer t.inflight.Done()

	var (
		result any
		entry  store.RunEntry
		err    error
	)
	if t.runner == nil {
		err = unknownAction()
		entry = refusedEntry(store.RunEntry{Action: id, Parameters: "null", Steps: []store.RunStep{}}, err, "null")
	} else {
		result, entry, err = t.runner.nested(ctx, id, params, asHost, recorded)
	}
	t.mu.Lock()
	t.entry.Steps = append(t.entry.Steps, store.RunStep{Call: &entry})
	if r := asRefusal(err); r != nil {
		t.nested = append(t.nested, r)
	}
	t.mu.Unlock()
	return result, err
}

// nestedRunner runs a call nested in the one a Trace records, through the
// same registry and host, one level deeper.
type nestedRunner interface {
	nested(ctx context.Context, id string, params any, asHost bool, recorded []store.RunStep) (any, store.RunEntry, error)
}

// close ends the trace once its body returned: no new call or command is
// recorded, and nested calls already running are waited for.
func (t *Trace) close() {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.inflight.Wait()
}

// abandon ends the trace of a body left running past its deadline: no
// new call or command is recorded, the nested calls already running are
// waited for (they run within the same deadline, each on its own
// goroutine, so they end with it), and the entry as recorded so far is
// returned (a copy).
func (t *Trace) abandon() store.RunEntry {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.inflight.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	return cloneEntry(t.entry)
}

// fromNestedCall reports whether r is a refusal a nested call returned to
// the body, rather than one the body raised itself.
func (t *Trace) fromNestedCall(r *Refusal) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.nested {
		if n == r {
			return true
		}
	}
	return false
}

// Progress reports how far the body has come: done of total (0 when the
// total is unknown), with a message for a person. It is delivered to the
// top-level call's [Call].Progress, if any, on the caller of Progress's
// goroutine, and never after the call returned. At most one report is
// delivered per Options.ProgressInterval (100 ms by default); a report
// that comes sooner, or whose done does not pass the last one delivered,
// is dropped (the next one carries the newer figures). The reports of
// nested calls and of batch steps are dropped: a batch reports its own
// step count. A trace from [NewTrace] drops every report.
func (t *Trace) Progress(done, total float64, message string) {
	t.mu.Lock()
	p, closing := t.progress, t.closing
	t.mu.Unlock()
	if closing {
		return
	}
	p.report(Progress{Done: done, Total: total, Message: message})
}

// Caller returns who calls, as the host built it ([Call].Caller), for a
// body that decides what an audience may see: nil for the host's own call
// and for a trace from [NewTrace]. A call confirming a pending change has
// PendingChange set. Nested calls see their caller's. The body must not
// change it.
func (t *Trace) Caller() *identity.Caller { return t.caller }
