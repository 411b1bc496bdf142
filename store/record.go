package store

import (
	"time"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// Record is one call as the run log keeps it: its entry (the run_entry
// shape, which replay compares) and its audit record (who
// called, what the gate decided, which pending change it touched).
type Record struct {
	Entry RunEntry `json:"entry"`
	Audit Audit    `json:"audit"`
	// RolledBack is true when the unit the call belonged to did not commit (a
	// refused call, a batch that stopped, a failed commit). A store with
	// transactions (sqlstore.Store) undid what the unit changed; without one
	// (no Store, a [github.com/actionreg/actions.RunLog]) nothing is undone,
	// and what a body changed before the refusal stays. A replay of a log
	// leaves such records out (sqlstore.Store.Read returns kept records unless
	// asked); Registry.Replay of one replays what it is given.
	RolledBack bool `json:"rolledBack,omitempty"`
}

// Audit is who made a call, recorded beside its run entry (never inside
// it: the entry keeps the run_entry shape), in its [Record]; a SQL
// store keeps its fields as columns.
type Audit struct {
	// At is when the call was admitted or refused (the gate's clock).
	At time.Time `json:"at"`
	// Caller is who called, nil for the host's own call.
	Caller *identity.Caller `json:"caller,omitempty"`
	// Alias is the deprecated alias the call named, when it named one;
	// the entry's action is the id.
	Alias string `json:"alias,omitempty"`
	// Code is the code of a refused call as the host sees it: the
	// forbidden code of a call the caller was told was unknown.
	Code codes.Code `json:"code,omitempty"`
	// PendingChange is the id of the change the call was held as
	// (confirmation_required), confirms or rejects.
	PendingChange string `json:"pendingChange,omitempty"`
	// Stage is what the call did to its pending change: held, confirmed
	// or rejected; empty for a call that touched none.
	Stage Stage `json:"stage,omitempty"`
	// Reason is the person's reason for a rejection (stage rejected,
	// [github.com/actionreg/actions.Decision].Reason).
	Reason string `json:"reason,omitempty"`
	// Original, on the record of an edited change (stage edited, or
	// held again as the editor's new proposal), is the canonical JSON
	// of the parameters the person replaced, as they were held; the
	// entry's Parameters are the edited ones. Replaces, on an edit held
	// again, is the id of the change it replaced (PendingChange is then
	// the new one's).
	Original string `json:"original,omitempty"`
	Replaces string `json:"replaces,omitempty"`
	// Batch is true for a step of a batch.
	Batch bool `json:"batch,omitempty"`
	// ToolCallID is the id the client gave the call
	// ([github.com/actionreg/actions.Call].ToolCallID).
	ToolCallID string `json:"toolCallId,omitempty"`
	// TraceID and SpanID identify the span of the call (or of the batch or
	// decision that made the record) as the registry's
	// [github.com/actionreg/actions.Observer] gave them: W3C trace-id and
	// parent-id hex with OpenTelemetry. Empty without an observer.
	TraceID string `json:"traceId,omitempty"`
	SpanID  string `json:"spanId,omitempty"`
	// IdempotencyKey is the key the call came with
	// ([github.com/actionreg/actions.Call].IdempotencyKey).
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Answered, on the audit line of a retry a recorded call answered, is
	// the store's id of the unit that answered it ([KeyRecord].Unit);
	// empty otherwise. The audit line is the recorded unit's last entry,
	// with the retry's audit, rolled back: the retry changed nothing.
	Answered string `json:"answered,omitempty"`
}

// Stage is what a call did to a pending change (see [Audit]).
type Stage string

// The stages of a pending change.
const (
	StageHeld      Stage = "held"
	StageConfirmed Stage = "confirmed"
	StageRejected  Stage = "rejected"
	// StageEdited: the person replaced the held call's arguments with their own
	// ([github.com/actionreg/actions.Decision].Params) and the edited call ran
	// (or was refused) under that decision.
	StageEdited Stage = "edited"
)
