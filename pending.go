package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// PendingChange is a call held until a person confirms it: an action that
// needs confirmation, called by a caller, checked in full, not run.
type PendingChange struct {
	// ID is 128 random bits in hex: whoever holds it may try to confirm,
	// and only the principal who proposed the change can.
	ID string `json:"id"`
	// Action is the action's id (never an alias); Alias the deprecated
	// alias the call named, if any.
	Action string `json:"action"`
	Alias  string `json:"alias,omitempty"`
	// Parameters is the canonical JSON (RFC 8785) of the parameters as
	// the call gave them: confirming checks them again, defaults and refs
	// included.
	Parameters string `json:"parameters"`
	// Proposer is who called: principal, surface and client. Its
	// PendingChange is empty.
	Proposer Caller `json:"proposer"`
	// Created and Expires bound the change's life (at most
	// [MaxPendingFor]).
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Receipt is what a caller whose call is held learns: the pending change's
// id, its action and when it expires. It travels in the
// confirmation_required refusal (Refusal.Pending).
type Receipt struct {
	ID      string    `json:"id"`
	Action  string    `json:"action"`
	Expires time.Time `json:"expires"`
}

// ErrNoPendingChange is what a [PendingStore] returns for an id it does not
// hold (never held, taken already, or dropped after expiry).
var ErrNoPendingChange = errors.New("actions: no pending change with this id")

// PendingStore holds pending changes. Implementations are safe for
// concurrent use. The registry checks expiry and the principal itself; a
// store may drop expired changes whenever it likes.
type PendingStore interface {
	// Hold stores a new change (its id is fresh).
	Hold(ctx context.Context, c PendingChange) error
	// Get returns the change with the id, or ErrNoPendingChange.
	Get(ctx context.Context, id string) (PendingChange, error)
	// Take removes the change with the id and returns it, once: of two
	// Takes of the same id, one gets the change and the other
	// ErrNoPendingChange. This is what keeps a double confirmation from
	// running a change twice.
	Take(ctx context.Context, id string) (PendingChange, error)
}

// MemoryPendingStore is a [PendingStore] in memory, safe for concurrent
// use. It drops expired changes when it holds a new one.
type MemoryPendingStore struct {
	mu      sync.Mutex
	changes map[string]PendingChange
}

// NewMemoryPendingStore returns an empty store.
func NewMemoryPendingStore() *MemoryPendingStore {
	return &MemoryPendingStore{changes: map[string]PendingChange{}}
}

// Hold stores c, dropping the changes that expired before c was created.
func (s *MemoryPendingStore) Hold(_ context.Context, c PendingChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, old := range s.changes {
		if !old.Expires.After(c.Created) {
			delete(s.changes, id)
		}
	}
	s.changes[c.ID] = c
	return nil
}

// Get returns the change with the id.
func (s *MemoryPendingStore) Get(_ context.Context, id string) (PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.changes[id]
	if !ok {
		return PendingChange{}, ErrNoPendingChange
	}
	return c, nil
}

// Take removes the change with the id and returns it, once.
func (s *MemoryPendingStore) Take(_ context.Context, id string) (PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.changes[id]
	if !ok {
		return PendingChange{}, ErrNoPendingChange
	}
	delete(s.changes, id)
	return c, nil
}

// Len returns how many changes the store holds, expired ones included.
func (s *MemoryPendingStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changes)
}

// hold stores a checked call as a pending change and returns its receipt.
func (g *gate) hold(ctx context.Context, id, alias, params string, c *Caller) (Receipt, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Receipt{}, internalRefusal("no random id for the pending change", err)
	}
	now := g.opts.Now()
	proposer := *c
	proposer.PendingChange = ""
	pc := PendingChange{ID: hex.EncodeToString(b[:]), Action: id, Alias: alias, Parameters: params,
		Proposer: proposer, Created: now, Expires: now.Add(g.opts.PendingFor)}
	if err := g.store().Hold(ctx, pc); err != nil {
		return Receipt{}, internalRefusal("the pending change could not be stored", err)
	}
	return Receipt{ID: pc.ID, Action: id, Expires: pc.Expires}, nil
}

// refusal is the confirmation_required refusal carrying the receipt.
func (rc Receipt) refusal() *Refusal {
	r := NewRefusal(CodeConfirmationRequired, "the call is held until a person confirms it")
	r.Pending = &rc
	return r
}

func internalRefusal(msg string, cause error) *Refusal {
	r := NewRefusal(CodeInternal, msg)
	r.cause = cause
	return r
}

// PendingChange returns the pending change id of caller's principal, for a
// screen that shows it before the person confirms. Errors: unknown_change
// when the store holds no such change, it expired, or caller is not the
// principal who proposed it; the store's error, wrapped in an internal
// refusal.
func (r *Registry[C]) PendingChange(ctx context.Context, id string, caller *Caller) (PendingChange, error) {
	return r.gateOf().pendingOf(ctx, id, caller)
}

func (g *gate) pendingOf(ctx context.Context, id string, c *Caller) (PendingChange, error) {
	pc, err := g.store().Get(ctx, id)
	switch {
	case errors.Is(err, ErrNoPendingChange):
		return PendingChange{}, unknownChange()
	case err != nil:
		return PendingChange{}, internalRefusal("the pending change could not be read", err)
	case c == nil || c.Principal == "" || c.Principal != pc.Proposer.Principal || !g.opts.Now().Before(pc.Expires):
		return PendingChange{}, unknownChange()
	}
	return pc, nil
}

// take claims the change for a confirmation or a rejection: once.
func (g *gate) take(ctx context.Context, id string, c *Caller) (PendingChange, error) {
	if _, err := g.pendingOf(ctx, id, c); err != nil {
		return PendingChange{}, err
	}
	pc, err := g.store().Take(ctx, id)
	switch {
	case errors.Is(err, ErrNoPendingChange):
		return PendingChange{}, unknownChange()
	case err != nil:
		return PendingChange{}, internalRefusal("the pending change could not be taken", err)
	}
	return pc, nil
}

func unknownChange() *Refusal {
	return NewRefusal(CodeUnknownChange, "no pending change of this caller has this id")
}

// Confirm runs the pending change id as host.Caller, the confirming
// person, now: every check of the gate is made again as that caller (the
// surface, capability, scope, serving, read-only and rate checks), the
// parameters are checked again, and the body runs once. The change is
// taken first, so that of two confirmations only one runs it; a change
// whose call is then refused is gone too (propose it again).
//
// The call is recorded like any other (host.OnEntry, host.OnAudit with
// the change's id); the body sees Caller.PendingChange set.
//
// Errors: unknown_change when host has no caller, the change is unknown,
// expired, already confirmed or rejected, or another principal proposed
// it; otherwise those of [Registry.Run].
func (r *Registry[C]) Confirm(ctx context.Context, id string, host *Host[C]) (any, RunEntry, error) {
	if host == nil || host.Caller == nil {
		return nil, RunEntry{}, unknownChange()
	}
	pc, err := r.gateOf().take(ctx, id, host.Caller)
	if err != nil {
		return nil, RunEntry{}, err
	}
	h := *host
	caller := *host.Caller
	caller.PendingChange = pc.ID
	h.Caller = &caller
	h.confirming = &pc
	name := pc.Action
	if pc.Alias != "" {
		name = pc.Alias
	}
	return r.Run(ctx, name, []byte(pc.Parameters), &h)
}

// Reject drops the pending change id of caller: nothing runs. Errors: as
// Confirm's unknown_change.
func (r *Registry[C]) Reject(ctx context.Context, id string, caller *Caller) error {
	_, err := r.gateOf().take(ctx, id, caller)
	return err
}
