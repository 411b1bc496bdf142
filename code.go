// The refusal codes and the policy of each: how a connector delivers it, and whether a retry can work.

package actions

import (
	"slices"
)

// Code names why a call or a registration was refused. The codes are listed
// in docs/refusals.md: the parameter and batch codes, internal for a
// recovered panic, cancelled for a call whose caller gave up, and the
// gate's. A body
// may raise a refusal with a code of its own (a domain refusal).
type Code string

// The refusal codes the registry itself raises.
const (
	// CodeInvalidParameters: the parameters break the action's schema, are
	// not I-JSON text, or name a model instance that a ref cannot resolve.
	CodeInvalidParameters Code = "invalid_parameters"
	// CodeUnknownAction: no action is registered under the id.
	CodeUnknownAction Code = "unknown_action"
	// CodeDuplicateName: an action with the same id is already registered.
	CodeDuplicateName Code = "duplicate_name"
	// CodeConstraintViolation: a definition breaks a rule of registration
	// (the id, the parameters schema) or a limit was passed.
	CodeConstraintViolation Code = "constraint_violation"
	// CodeInvalidScriptStep: a batch holds a step this package does not run.
	CodeInvalidScriptStep Code = "invalid_script_step"
	// CodeUnknownReference: a batch placeholder names a result not set yet.
	CodeUnknownReference Code = "unknown_reference"
	// CodeInternal: a body, a resolver or a host hook panicked.
	CodeInternal Code = "internal"
	// CodeCancelled: the call's context was done before the call ended
	// (the caller gave up, went away, or the server is shutting down):
	// context.Canceled or context.DeadlineExceeded in the error's chain.
	// Not a fault of the server, nor of the call: retry as the caller
	// sees fit.
	CodeCancelled Code = "cancelled"
	// CodeOutputInvalid: the body's result breaks the action's output
	// schema. The body ran; the
	// result is withheld, and the refusal's issues, pointing into the
	// result, are for the host.
	CodeOutputInvalid Code = "output_invalid"
	// CodeDiverged: a replayed call departed from its record (a
	// *[Divergence]).
	CodeDiverged Code = "diverged"
	// CodeResultTooLarge: the result is over its bound
	// (Limits.MaxResultBytes or the action's own) and is neither a list
	// nor a string that can be cut (see [Bounded]). The body ran; its
	// unit is undone. Narrow the call.
	CodeResultTooLarge Code = "result_too_large"
)

// Error returns the code itself. A Code is an error so that it is its
// own sentinel for [errors.Is], as a syscall.Errno is:
//
//	if errors.Is(err, actions.CodeInvalidParameters) { ... }
//
// A *Refusal matches the code it carries, and no other; for every error
// the library returns, errors.Is(err, X) holds exactly when [CodeOf](err)
// is X (docs/refusals.md). A body's own codes match too:
// errors.Is(err, actions.Code("tank_empty")).
func (c Code) Error() string { return string(c) }

// sentinelOf is the sentinel of c: c itself, internal for "".
func sentinelOf(c Code) error {
	if c == "" {
		return CodeInternal
	}
	return c
}

// Retry says whether trying the same call again could ever work.
type Retry string

// The retry verdicts.
const (
	RetryNever        Retry = "never"         // the same call will be refused again
	RetryAfterEdit    Retry = "after-edit"    // change the call, then try again
	RetryAfterBackoff Retry = "after-backoff" // the same call may work later
)

// Transport says how a connector reports a refusal to its caller.
// A protocol error means the call never happened; a tool result means it
// happened and was refused, which a model should read and act on.
type Transport string

// The transports.
const (
	TransportProtocol   Transport = "protocol"    // a JSON-RPC error
	TransportToolResult Transport = "tool-result" // an MCP result with isError set
)

// Policy is how a connector renders a refusal of one code.
type Policy struct {
	Transport Transport `json:"transport"`
	Retry     Retry     `json:"retry"`
}

// PolicyOf returns the policy for a code. A code the registry does not
// raise itself is a body's domain refusal: a tool result, never retried
// (a body that knows better sets Retry on its [Refusal]). The empty code
// is internal's, as [CodeOf] and [Refusal.Error] read it.
func PolicyOf(c Code) Policy {
	switch c {
	case "":
		return PolicyOf(CodeInternal)
	case CodeUnknownAction, CodeDuplicateName, CodeConstraintViolation, CodeOutputInvalid, CodeDiverged:
		return Policy{TransportProtocol, RetryNever}
	case CodeInvalidParameters, CodeUnknownReference, CodeInvalidScriptStep, CodeResultTooLarge:
		return Policy{TransportToolResult, RetryAfterEdit}
	case CodeInternal, CodeCancelled:
		return Policy{TransportProtocol, RetryAfterBackoff}
	case CodeTimeout:
		return timeoutPolicy
	}
	if _, p, ok := gateSentinel(c); ok {
		return p
	}
	if _, p, ok := keySentinel(c); ok {
		return p
	}
	return Policy{TransportToolResult, RetryNever}
}

// CodeDomain is the key [Policies] uses for every body's own code (a
// domain refusal). The registry never raises it.
const CodeDomain Code = "domain"

// Policies returns the published code → policy table as a fresh map, for a
// connector that serves it. The key [CodeDomain] stands for every body's
// own code.
func Policies() map[Code]Policy {
	m := map[Code]Policy{CodeDomain: PolicyOf(CodeDomain)}
	for _, c := range registryCodes() {
		m[c] = PolicyOf(c)
	}
	return m
}

// registryCodes are the codes the registry itself raises.
func registryCodes() []Code {
	return append([]Code{CodeUnknownAction, CodeInvalidParameters, CodeUnknownReference,
		CodeInvalidScriptStep, CodeDuplicateName, CodeConstraintViolation, CodeInternal, CodeCancelled, CodeOutputInvalid, CodeDiverged,
		CodeResultTooLarge, CodeTimeout},
		append(slices.Clone(gateCodes), keyCodes...)...)
}

func nextActionOf(c Code) string {
	switch c {
	case "":
		return nextActionOf(CodeInternal)
	case CodeInvalidParameters:
		return "Fix the parameters named in the issues and call again."
	case CodeUnknownAction:
		return "List the available tools and call one of them."
	case CodeInvalidScriptStep:
		return "Keep only call steps with call, with and as, then run the batch again."
	case CodeUnknownReference:
		return "Name only results set by an earlier step, then run the batch again."
	case CodeInternal:
		return "Try again later; if it keeps failing, report it."
	case CodeCancelled:
		return "The call was cancelled before it ended; call again if it is still wanted."
	case CodeDuplicateName, CodeConstraintViolation:
		return "Fix the definition; calling again will not help."
	case CodeTimeout:
		return timeoutNextAction
	case CodeOutputInvalid:
		return "Do not retry: the action's result broke its own contract; tell the user the action failed."
	}
	if s := gateNextAction(c); s != "" {
		return s
	}
	return keyNextAction(c)
}

// The refusal codes of the gate. Their transport and retry are in
// [Policies]; see docs/gate.md.
const (
	// CodeForbiddenSurface: the action is not offered on the caller's
	// surface. A caller receives it as unknown_action (see [Caller]). A
	// decision ([Registry.Decide]) from a surface the change's
	// [Approval] does not list is refused with it as it is.
	CodeForbiddenSurface Code = "forbidden_surface"
	// CodeForbiddenCapability: the caller lacks the action's capability.
	// A caller receives it as unknown_action. A proposer deciding its
	// own change without the capability the [Approval] asks of it
	// ([ProposerNeedsCapability]) is refused with it as it is.
	CodeForbiddenCapability Code = "forbidden_capability"
	// CodeInsufficientScope: the caller's token lacks the read or write
	// scope the action's effect needs; the refusal carries an RFC 6750
	// challenge.
	CodeInsufficientScope Code = "insufficient_scope"
	// CodeNotServing: the host stopped serving the action, or all.
	CodeNotServing Code = "not_serving"
	// CodeReadOnly: the registry is read-only and the action writes.
	CodeReadOnly Code = "read_only"
	// CodeRateLimited: the caller called the action too often; RetryAt
	// says when a call may pass.
	CodeRateLimited Code = "rate_limited"
	// CodeConfirmationRequired: the call was checked in full and is held
	// as a pending change (the refusal's Pending) until a person confirms
	// it.
	CodeConfirmationRequired Code = "confirmation_required"
	// CodeUnknownChange: no pending change this caller may see has the
	// id (it sees the changes it proposed and those its [Approval] lets
	// it decide), or it expired, or it was confirmed or rejected
	// already.
	CodeUnknownChange Code = "unknown_change"
	// CodeRejected: the person rejected the pending change; nothing ran.
	// It is the code of the rejection's record, and of a held call whose
	// person declined when asked in place.
	CodeRejected Code = "rejected"
)

// gateSentinel returns the sentinel and policy of a gate code.
func gateSentinel(c Code) (error, Policy, bool) {
	switch c {
	case CodeForbiddenSurface:
		return CodeForbiddenSurface, Policy{TransportToolResult, RetryNever}, true
	case CodeForbiddenCapability:
		return CodeForbiddenCapability, Policy{TransportToolResult, RetryNever}, true
	case CodeInsufficientScope:
		return CodeInsufficientScope, Policy{TransportToolResult, RetryNever}, true
	case CodeNotServing:
		return CodeNotServing, Policy{TransportToolResult, RetryNever}, true
	case CodeReadOnly:
		return CodeReadOnly, Policy{TransportToolResult, RetryAfterBackoff}, true
	case CodeRateLimited:
		return CodeRateLimited, Policy{TransportToolResult, RetryAfterBackoff}, true
	case CodeConfirmationRequired:
		return CodeConfirmationRequired, Policy{TransportToolResult, RetryNever}, true
	case CodeUnknownChange:
		return CodeUnknownChange, Policy{TransportToolResult, RetryNever}, true
	case CodeRejected:
		return CodeRejected, Policy{TransportToolResult, RetryNever}, true
	case CodeForbiddenProposer:
		return CodeForbiddenProposer, Policy{TransportToolResult, RetryNever}, true
	case CodeStaleChange:
		return CodeStaleChange, Policy{TransportToolResult, RetryNever}, true
	}
	return nil, Policy{}, false
}

func gateNextAction(c Code) string {
	switch c {
	case CodeForbiddenSurface, CodeForbiddenCapability:
		return "Do not call this action; it is not offered to this caller."
	case CodeInsufficientScope:
		return "Ask the user to grant the scope named in the challenge, then call again."
	case CodeNotServing:
		return "Tell the user the action is not available now."
	case CodeReadOnly, CodeRateLimited:
		return "Wait, then make the same call again."
	case CodeConfirmationRequired:
		return "Tell the user the change waits for their confirmation; do not call again."
	case CodeUnknownChange:
		return "Propose the change again by calling the action."
	case CodeStaleChange:
		return "Reject the change and propose it again: what it would do now is not what the person was shown."
	case CodeForbiddenProposer:
		return "Ask another person who may approve the change to decide it."
	case CodeRejected:
		return "Tell the user the change was rejected and nothing ran; do not call again unless asked."
	}
	return ""
}

var gateCodes = []Code{CodeForbiddenSurface, CodeForbiddenCapability, CodeInsufficientScope,
	CodeNotServing, CodeReadOnly, CodeRateLimited, CodeConfirmationRequired, CodeUnknownChange, CodeRejected, CodeForbiddenProposer, CodeStaleChange}

// The refusal codes of idempotency keys.
const (
	// CodeInProgress: a call with the same key is still running; retry
	// the same call, with the same key, after a backoff.
	CodeInProgress Code = "in_progress"
	// CodeIdempotencyConflict: the key was used, within its window, for a
	// call of the same action with other parameters. The refusal names
	// neither the key nor a parameter.
	CodeIdempotencyConflict Code = "idempotency_conflict"
	// CodeIdempotencyKeyRequired: the action wants a key
	// ([Definition].NeedsIdempotencyKey) and the caller's call has none.
	CodeIdempotencyKeyRequired Code = "idempotency_key_required"
	// CodeOutcomeUnknown: the process running the call under this key
	// (or the task) stopped before the call ended, and a replica of its
	// origin settled it afterwards (sqlstore.Store.SettleOrphans). Its
	// unit never committed, so its changes to the store's database were
	// not kept; whatever its body did outside that database (a payment,
	// a message) may have happened. Never retried: the same key answers
	// it again, and a new call (with a new key) is safe only once the
	// caller has checked that the first one did not take effect. A tool
	// result, so that a model reads it.
	CodeOutcomeUnknown Code = "outcome_unknown"
)

var keyCodes = []Code{CodeInProgress, CodeIdempotencyConflict, CodeIdempotencyKeyRequired, CodeOutcomeUnknown}

// keySentinel returns the sentinel and policy of an idempotency code.
func keySentinel(c Code) (error, Policy, bool) {
	switch c {
	case CodeInProgress:
		return CodeInProgress, Policy{TransportToolResult, RetryAfterBackoff}, true
	case CodeIdempotencyConflict:
		return CodeIdempotencyConflict, Policy{TransportToolResult, RetryAfterEdit}, true
	case CodeIdempotencyKeyRequired:
		return CodeIdempotencyKeyRequired, Policy{TransportToolResult, RetryAfterEdit}, true
	case CodeOutcomeUnknown:
		return CodeOutcomeUnknown, Policy{TransportToolResult, RetryNever}, true
	}
	return nil, Policy{}, false
}

func keyNextAction(c Code) string {
	switch c {
	case CodeInProgress:
		return "The same call is still running: wait, then send it again with the same idempotency key."
	case CodeIdempotencyConflict:
		return "This idempotency key was used for another call: use a new key for a new call, or resend the first call as it was."
	case CodeIdempotencyKeyRequired:
		return "Call again with an idempotency key: a new random string for each intended change, reused only to retry that same call."
	case CodeOutcomeUnknown:
		return "Do not send this call again blindly: it may have taken effect. Check whether it did; only if it did not, make it again with a new idempotency key."
	}
	return ""
}

// CodeTimeout: the body ran past its time limit ([Definition].Timeout,
// or Options.Timeout): its context ended, the call was refused and its
// unit rolled back. The same call may work later, or with less to do:
// retry after a backoff (a tool result, so that a model reads it).
const CodeTimeout Code = "timeout"

// timeoutPolicy is the policy of [CodeTimeout].
var timeoutPolicy = Policy{Transport: TransportToolResult, Retry: RetryAfterBackoff}

const timeoutNextAction = "The action took too long; try again later, or with less to do."
