// Who calls: the Caller the host builds for each call, and the Audit line that records it.

package actions

import (
	"slices"
	"time"

	"github.com/actionreg/actions/codes"
)

// Caller is who calls, built by the host for each call from what it
// authenticated (a session, a verified token), never from the call's
// arguments. Set it as [Call].Caller; a nil Caller is the host itself,
// which the gate lets through (see [Registry.Run]). The token itself is
// never held: only what the host derived from it.
type Caller struct {
	// Principal identifies the person (or service) acting, for rate
	// limits, pending changes and the audit record.
	Principal string `json:"principal"`
	// Capabilities are the capabilities the host derived for this call.
	Capabilities []string `json:"capabilities,omitempty"`
	// Token says the call came with a bearer token; Scopes are then its
	// scopes, and the scope check applies.
	Token  bool     `json:"token,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	// Surface is where the call comes from: ui, mcp or ai. A caller
	// whose surface an action does not offer (an empty or unknown one
	// offers none) is told the action is unknown (unknown_action), the
	// audit keeping forbidden_surface: set it on every caller.
	Surface Surface `json:"surface"`
	// Client is the connected app that called, when one did.
	Client *Client `json:"client,omitempty"`
	// PendingChange is the id of the pending change this call confirms.
	// [Registry.Decide] sets it; a host that sets it itself confirms
	// nothing.
	PendingChange string `json:"pendingChange,omitempty"`
}

// clone copies c with its slices.
func cloneCaller(c *Caller) Caller {
	cp := *c
	cp.Capabilities = slices.Clone(c.Capabilities)
	cp.Scopes = slices.Clone(c.Scopes)
	if c.Client != nil {
		cl := *c.Client
		cp.Client = &cl
	}
	return cp
}

// Can reports whether the caller holds the capability c ("" is held by
// every caller). A nil Caller, the host, holds every capability.
func (c *Caller) Can(capability string) bool {
	return c == nil || capability == "" || slices.Contains(c.Capabilities, capability)
}

// Audit is who made a call, recorded beside its run entry (never inside
// it: the entry keeps the run_entry shape), in its [Record]; a SQL
// store keeps its fields as columns.
type Audit struct {
	// At is when the call was admitted or refused (the gate's clock).
	At time.Time `json:"at"`
	// Caller is who called, nil for the host's own call.
	Caller *Caller `json:"caller,omitempty"`
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
	// [Decision].Reason).
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
	// ToolCallID is the id the client gave the call ([Call].ToolCallID).
	ToolCallID string `json:"toolCallId,omitempty"`
	// TraceID and SpanID identify the span of the call (or of the batch
	// or decision that made the record) as the registry's [Observer]
	// gave them: W3C trace-id and parent-id hex with OpenTelemetry. Empty
	// without an observer.
	TraceID string `json:"traceId,omitempty"`
	SpanID  string `json:"spanId,omitempty"`
	// IdempotencyKey is the key the call came with ([Call].IdempotencyKey).
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Answered, on the audit line of a retry a recorded call answered, is
	// the store's id of the unit that answered it ([KeyRecord].Unit);
	// empty otherwise. The audit line is the recorded unit's last entry,
	// with the retry's audit, rolled back: the retry changed nothing.
	Answered string `json:"answered,omitempty"`
}

// Client is the connected app a call came through: its id and host, never
// its token.
type Client struct {
	ID   string `json:"id"`
	Host string `json:"host,omitempty"`
}

// Stage is what a call did to a pending change (see [Audit]).
type Stage string

// The stages of a pending change.
const (
	StageHeld      Stage = "held"
	StageConfirmed Stage = "confirmed"
	StageRejected  Stage = "rejected"
	// StageEdited: the person replaced the held call's arguments with
	// their own ([Decision].Params) and the edited call ran (or was
	// refused) under that decision.
	StageEdited Stage = "edited"
)
