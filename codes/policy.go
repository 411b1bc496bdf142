package codes

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
// happened and was refused, which a model should read and act on (MCP
// SEP-1303).
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

// PolicyOf returns the policy of a code, as each constant of this
// package documents it. A code the registry does not raise itself is a
// body's domain refusal: a tool result, never retried (a body that knows
// better sets the retry on its refusal). The empty code is [Internal]'s:
// a refusal without a code is internal in every reading.
func PolicyOf(c Code) Policy {
	switch c {
	case "":
		return PolicyOf(Internal)
	case UnknownAction, DuplicateName, ConstraintViolation, OutputInvalid, Diverged:
		return Policy{TransportProtocol, RetryNever}
	case Internal, Cancelled:
		return Policy{TransportProtocol, RetryAfterBackoff}
	case InvalidParameters, UnknownReference, InvalidScriptStep, ResultTooLarge,
		IdempotencyConflict, IdempotencyKeyRequired:
		return Policy{TransportToolResult, RetryAfterEdit}
	case Timeout, ReadOnly, RateLimited, InProgress:
		return Policy{TransportToolResult, RetryAfterBackoff}
	}
	return Policy{TransportToolResult, RetryNever} // the gate's other codes, and a domain's
}

// raised lists the codes the registry raises itself.
var raised = []Code{
	InvalidParameters, UnknownAction, DuplicateName, ConstraintViolation,
	InvalidScriptStep, UnknownReference, Internal, Cancelled, OutputInvalid,
	Diverged, ResultTooLarge, Timeout,
	ForbiddenSurface, ForbiddenCapability, InsufficientScope, NotServing,
	ReadOnly, RateLimited, ConfirmationRequired, UnknownChange, Rejected,
	ForbiddenProposer, StaleChange,
	InProgress, IdempotencyConflict, IdempotencyKeyRequired, OutcomeUnknown,
}

// Policies returns the published code → policy table as a fresh map, for
// a connector that serves it: every code the registry raises itself, and
// the key [Domain], which stands for every body's own code.
func Policies() map[Code]Policy {
	m := make(map[Code]Policy, len(raised)+1)
	m[Domain] = PolicyOf(Domain)
	for _, c := range raised {
		m[c] = PolicyOf(c)
	}
	return m
}
