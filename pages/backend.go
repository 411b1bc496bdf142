package pages

import (
	"context"
	"errors"
	"time"

	"github.com/actionreg/actions"
)

// Backend is everything the pages ask of the library: the pending changes
// a person may decide, the decision itself, and the run log. The pages
// hold no state of their own beyond a CSRF key; every access decision is
// the backend's (the pages pass who is asking to each method).
//
// [SQL] implements it on an [*actions.Registry] and a SQL store. A Backend
// must be safe for concurrent use.
type Backend interface {
	// Pending returns the pending changes that who may decide, newest
	// first. A nil who has none.
	Pending(ctx context.Context, who *actions.Caller) ([]Change, error)
	// Change returns the pending change id if who may decide it.
	// Errors: ErrNotFound when there is no such change or who may not
	// decide it (the two are never told apart); ErrExpired and ErrDecided
	// only for a change who could have decided.
	Change(ctx context.Context, id string, who *actions.Caller) (Change, error)
	// Decide confirms (confirm true) or rejects the pending change id as
	// who. A confirmed call that is then refused is not an error: the
	// refusal is in the Decision. Errors: those of Change, and the
	// store's.
	Decide(ctx context.Context, id string, confirm bool, who *actions.Caller) (Decision, error)
	// Records returns one page of the run log records that q selects and
	// who may read, newest first.
	Records(ctx context.Context, q Query, who *actions.Caller) (RecordPage, error)
	// Record returns the record id if who may read it; ErrNotFound
	// otherwise.
	Record(ctx context.Context, id string, who *actions.Caller) (Record, error)
	// Replay runs the call record id holds again and compares it with
	// the record. errors.ErrUnsupported when the host offers no replay
	// (the pages then show no replay button).
	Replay(ctx context.Context, id string, who *actions.Caller) (Replay, error)
}

// The errors a Backend returns for a change or record it will not show.
var (
	// ErrNotFound: no such change or record, or not who's to see. The
	// pages answer 404 with no detail.
	ErrNotFound = errors.New("pages: not found")
	// ErrExpired: who's change, past its expiry; nothing ran.
	ErrExpired = errors.New("pages: the change expired")
	// ErrDecided: who's change, confirmed or rejected already.
	ErrDecided = errors.New("pages: the change was decided already")
)

// Change is a pending change as a person sees it before deciding.
type Change struct {
	// ID is the change's id (the library's: 128 random bits in hex).
	ID string
	// Proposer is who asked.
	Proposer Who
	// Created and Expires bound the change's life.
	Created, Expires time.Time
	// Calls are the held calls, in order: one for a single call, each
	// held step for a held batch.
	Calls []Call
	// Summary is the host's description of the held call
	// (actions.Approval.Describe) and Reason the approval rule's; either
	// may be empty.
	Summary, Reason string
}

// Call is one held call of a change.
type Call struct {
	// Action is the action's id; Alias the deprecated alias called.
	Action, Alias string
	// Title and Description are the action's text for people.
	Title, Description string
	// Effect is read, write or delete; Destructive is the action's
	// derived destructiveness (MCP destructiveHint).
	Effect      string
	Destructive bool
	// Parameters is the canonical JSON of the parameters exactly as
	// the body will receive them (defaults filled, refs resolved): what
	// the person confirms. For a step of a held batch, its "with" as
	// the batch wrote it.
	Parameters string
}

// Who is a caller as the pages show one.
type Who struct {
	Principal string
	Surface   string
	Client    string // the connected app's id, if any
}

// Decision is what came of a confirmation or a rejection.
type Decision struct {
	// Confirmed is true for a confirmation, false for a rejection.
	Confirmed bool
	// Outcome is "done" or "refused" for a confirmation, "" for a
	// rejection.
	Outcome string
	// Result is the canonical JSON of a done call's result ("" for
	// none); Code and Message are a refused call's refusal.
	Result        string
	Code, Message string
	// Record is the id of the confirmed call's record in the run log,
	// when the backend knows it.
	Record string
}

// Query selects run log records. Zero fields select everything.
type Query struct {
	Action string
	// Outcome is "", "done", "refused" (Code: one code only), "held",
	// "confirmed" or "rejected".
	Outcome, Code string
	// Caller is a principal.
	Caller string
	// Since and Until bound when the records were written: at or after
	// Since, before Until.
	Since, Until time.Time
	// Cursor is a previous page's Next: the page after it.
	Cursor string
	// Limit is the page's size (the backend may bound it).
	Limit int
}

// RecordPage is one page of records, newest first; Next is the cursor of
// the following page, "" on the last one.
type RecordPage struct {
	Records []Record
	Next    string
}

// Record is one run log record: an entry and what was kept beside it.
type Record struct {
	ID         string
	At         time.Time
	Origin     string
	RolledBack bool
	// Audit is who called and what the gate decided; nil for none.
	Audit *Audit
	// Entry is the run entry; Text its canonical JSON as stored.
	Entry actions.RunEntry
	Text  string

	raw actions.Record // what SQL replays
}

// Audit is the audit record kept beside an entry.
type Audit struct {
	At            time.Time
	Caller        *Who // nil: the host's own call
	Capabilities  []string
	Alias         string
	Code          string // as the host sees it
	PendingChange string // held as, or confirms
}

// Replay is what replaying a record found.
type Replay struct {
	// Same: the call did again what the record says.
	Same bool
	// Path is the JSON Pointer of the first member that differs; Want
	// and Got the recorded and the replayed values there.
	Path, Want, Got string
}
