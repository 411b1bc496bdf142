package actions

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// PendingChange is a call held until a person confirms it: an action that
// needs confirmation, called by a caller, checked in full, not run.
type PendingChange struct {
	// ID is 128 random bits in hex: whoever holds it may try to decide,
	// and only a person the action's [Approval] names can (by default
	// the principal who proposed the change).
	ID string `json:"id"`
	// Action is the action's id (never an alias); Alias the deprecated
	// alias the call named, if any.
	Action string `json:"action"`
	Alias  string `json:"alias,omitempty"`
	// Parameters is the canonical JSON (RFC 8785) of the checked
	// parameters, defaults filled and refs resolved: exactly what the
	// body will receive, and what the person is shown. Given is the
	// parameters as the call gave them. Confirming checks Given again,
	// defaults and refs included, and runs only when the result is still
	// Parameters (otherwise stale_change). Both empty for a batch.
	Parameters string `json:"parameters,omitempty"`
	Given      string `json:"given,omitempty"`
	// Description is the host's text about the held call
	// ([Approval].Describe), Reason the approval rule's
	// ([Approval].When); either may be empty.
	Description string `json:"description,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Preview, for an action with [Definition].Preview, is the entry of
	// the run made before the call was held and then undone: the calls
	// its body made, each with its parameters as it ran and its result,
	// in order. Confirming runs the call again and keeps it only when it
	// gives this entry again (stale_change otherwise).
	Preview *store.RunEntry `json:"preview,omitempty"`
	// Batch is the held batch, when a step of a batch needed
	// confirmation: confirming runs it whole. Action is then the first
	// step that needs confirmation.
	Batch *Batch `json:"batch,omitempty"`
	// Held, for a batch, are its steps that need confirmation.
	Held []HeldStep `json:"held,omitempty"`
	// IdempotencyKey is the key the held call came with: deciding the
	// change records the decision under it, so that a retry of the held
	// call gets the decided answer (docs/database.md).
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Proposer is who called: principal, surface and client. Its
	// PendingChange is empty.
	Proposer identity.Caller `json:"proposer"`
	// Created and Expires bound the change's life (at most 7 days).
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
	// Steps, for a held batch, are the steps that need confirmation.
	Steps []HeldStep `json:"steps,omitempty"`
}

// HeldStep is a step of a held batch that needs confirmation.
type HeldStep struct {
	Index  int    `json:"index"` // in Batch.Steps
	Action string `json:"action"`
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
	// List returns the changes the principal proposed, newest first,
	// expired ones included.
	List(ctx context.Context, principal string) ([]PendingChange, error)
	// ListAll returns every change the store holds, whoever proposed
	// it, newest first, expired ones included: the registry keeps those
	// a person may decide (see [Registry.ChangesToDecide]).
	ListAll(ctx context.Context) ([]PendingChange, error)
}

// memoryPendingStore is the gate's [PendingStore] when GateOptions.Pending
// is nil: in memory, safe for concurrent use. It drops expired changes
// when it holds a new one. The zero value is an empty store.
type memoryPendingStore struct {
	mu      sync.Mutex
	changes map[string]PendingChange
}

// Hold stores c, dropping the changes that expired before c was created.
func (s *memoryPendingStore) Hold(_ context.Context, c PendingChange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changes == nil {
		s.changes = map[string]PendingChange{}
	}
	for id, old := range s.changes {
		if !old.Expires.After(c.Created) {
			delete(s.changes, id)
		}
	}
	s.changes[c.ID] = c
	return nil
}

// Get returns the change with the id.
func (s *memoryPendingStore) Get(_ context.Context, id string) (PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.changes[id]
	if !ok {
		return PendingChange{}, ErrNoPendingChange
	}
	return c, nil
}

// Take removes the change with the id and returns it, once.
func (s *memoryPendingStore) Take(_ context.Context, id string) (PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.changes[id]
	if !ok {
		return PendingChange{}, ErrNoPendingChange
	}
	delete(s.changes, id)
	return c, nil
}

// List returns the changes principal proposed, newest first.
func (s *memoryPendingStore) List(_ context.Context, principal string) ([]PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PendingChange
	for _, c := range s.changes {
		if c.Proposer.Principal == principal {
			out = append(out, c.clone())
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// ListAll returns every change the store holds, newest first.
func (s *memoryPendingStore) ListAll(_ context.Context) ([]PendingChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PendingChange, 0, len(s.changes))
	for _, c := range s.changes {
		out = append(out, c.clone())
	}
	sortNewestFirst(out)
	return out, nil
}

// sortNewestFirst orders changes by creation, newest first, then by id.
func sortNewestFirst(cs []PendingChange) {
	sort.Slice(cs, func(i, j int) bool {
		if !cs[i].Created.Equal(cs[j].Created) {
			return cs[i].Created.After(cs[j].Created)
		}
		return cs[i].ID < cs[j].ID
	})
}

// clone copies c with its caller's slices and its batch.
func (c PendingChange) clone() PendingChange {
	c.Proposer = cloneCaller(&c.Proposer)
	if c.Batch != nil {
		b := c.Batch.clone()
		c.Batch = &b
	}
	c.Held = append([]HeldStep(nil), c.Held...)
	if c.Preview != nil {
		e := cloneEntry(*c.Preview)
		c.Preview = &e
	}
	return c
}

// defaultMaxPending is GateOptions.MaxPending when left zero.
const defaultMaxPending = 16

// receipt is what the proposer of c learns.
func (c PendingChange) receipt() Receipt {
	rc := Receipt{ID: c.ID, Action: c.Action, Expires: c.Expires}
	if len(c.Held) > 0 {
		rc.Steps = append([]HeldStep(nil), c.Held...)
	}
	return rc
}

// confirmationRequired is the refusal carrying the receipt.
func (rc Receipt) confirmationRequired() *Refusal {
	r := NewRefusal(codes.ConfirmationRequired, "the call is held until a person confirms it")
	r.Pending = &rc
	return r
}

func unknownChange() *Refusal {
	return NewRefusal(codes.UnknownChange, "no pending change of this caller has this id")
}

// givenText is the parameters as the held call gave them (Parameters for
// a change held before Given was kept).
func (c PendingChange) givenText() string {
	if c.Given != "" {
		return c.Given
	}
	return c.Parameters
}
