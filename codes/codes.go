package codes

// Code names why a call or a registration was refused: one of the
// constants of this package, which the registry raises itself, or a
// body's own code (a domain refusal), any other snake_case word.
type Code string

// Error returns the code itself. A Code is an error so that it is its
// own sentinel for errors.Is, as a syscall.Errno is:
//
//	if errors.Is(err, codes.InvalidParameters) { ... }
//
// A refusal matches the code it carries, and no other; for every error
// the registry returns, errors.Is(err, X) holds exactly when the code it
// carries (actions.CodeOf) is X. A body's own codes match too:
// errors.Is(err, codes.Code("tank_empty")).
func (c Code) Error() string { return string(c) }

// The codes of a call's parameters, batches and results, and of
// registration.
const (
	// InvalidParameters: the parameters break the action's schema, are
	// not I-JSON text (RFC 7493), or name a model instance that a ref
	// cannot resolve. A tool result; retry after an edit.
	InvalidParameters Code = "invalid_parameters"
	// UnknownAction: no action is registered under the id, or the
	// caller may not see it. A protocol error; never retry.
	UnknownAction Code = "unknown_action"
	// DuplicateName: an action with the same id is already registered.
	// A protocol error (registration); never retry.
	DuplicateName Code = "duplicate_name"
	// ConstraintViolation: a definition breaks a rule of registration
	// (the id, the parameters schema) or a limit was passed. A protocol
	// error; never retry.
	ConstraintViolation Code = "constraint_violation"
	// InvalidScriptStep: a batch holds a step the registry does not run.
	// A tool result; retry after an edit.
	InvalidScriptStep Code = "invalid_script_step"
	// UnknownReference: a batch placeholder names a result no earlier
	// step set. A tool result; retry after an edit.
	UnknownReference Code = "unknown_reference"
	// Internal: a body, a resolver or a host hook panicked, a result has
	// no JSON form, or the store failed; also the code of a refusal
	// without one. A protocol error; retry after a backoff.
	Internal Code = "internal"
	// Cancelled: the call's context was done before the call ended (the
	// caller gave up, went away, or the server is shutting down):
	// context.Canceled or context.DeadlineExceeded in the error's chain.
	// Not a fault of the server, nor of the call. A protocol error;
	// retry after a backoff, as the caller sees fit.
	Cancelled Code = "cancelled"
	// OutputInvalid: the body's result breaks the action's output
	// schema. The body ran; the result is withheld, and the refusal's
	// issues, pointing into the result, are for the host. A protocol
	// error; never retry.
	OutputInvalid Code = "output_invalid"
	// Diverged: a replayed call departed from its record. A protocol
	// error; never retry.
	Diverged Code = "diverged"
	// ResultTooLarge: the result is over its bound (the registry's or
	// the action's) and is neither a list nor a string that can be cut.
	// The body ran; its unit is undone. A tool result; retry after an
	// edit that narrows the call.
	ResultTooLarge Code = "result_too_large"
	// Timeout: the body ran past its time limit (the action's, or the
	// registry's): its context ended, the call was refused and its unit
	// rolled back. The same call may work later, or with less to do. A
	// tool result, so that a model reads it; retry after a backoff.
	Timeout Code = "timeout"
)

// The codes of the gate, which decides before the parameters are looked
// at whether a caller may make a call, and of pending changes that a
// person confirms or rejects. Each is a tool result.
const (
	// ForbiddenSurface: the action is not offered on the caller's
	// surface. A caller receives it as [UnknownAction]; a decision on a
	// pending change from a surface its approval does not list is
	// refused with it as it is. Never retry.
	ForbiddenSurface Code = "forbidden_surface"
	// ForbiddenCapability: the caller lacks the action's capability. A
	// caller receives it as [UnknownAction]; a proposer deciding its own
	// change without the capability the approval asks of it is refused
	// with it as it is. Never retry.
	ForbiddenCapability Code = "forbidden_capability"
	// InsufficientScope: the caller's token lacks the read or write
	// scope the action's effect needs; the refusal carries an RFC 6750
	// challenge. Never retry (with the same token).
	InsufficientScope Code = "insufficient_scope"
	// NotServing: the host stopped serving the action, or all. Never
	// retry.
	NotServing Code = "not_serving"
	// ReadOnly: the registry is read-only and the action writes. Retry
	// after a backoff.
	ReadOnly Code = "read_only"
	// RateLimited: the caller called the action too often; the refusal
	// says when a call may pass. Retry after a backoff.
	RateLimited Code = "rate_limited"
	// ConfirmationRequired: the call was checked in full and is held as
	// a pending change until a person confirms it. Never retry: the
	// change runs once confirmed.
	ConfirmationRequired Code = "confirmation_required"
	// UnknownChange: no pending change this caller may see has the id
	// (it sees the changes it proposed and those it may decide), or it
	// expired, or it was confirmed or rejected already. Never retry.
	UnknownChange Code = "unknown_change"
	// Rejected: the person rejected the pending change; nothing ran. It
	// is the code of the rejection's record, and of a held call whose
	// person declined when asked in place. Never retry.
	Rejected Code = "rejected"
	// ForbiddenProposer: the change's approval keeps its proposer from
	// deciding it (four eyes): another person must. Never retry.
	ForbiddenProposer Code = "forbidden_proposer"
	// StaleChange: a confirmed call, checked again, is no longer the
	// call the person was shown (a ref resolves to another value, a
	// default changed); nothing ran. Never retry: reject the change and
	// propose it again.
	StaleChange Code = "stale_change"
)

// The codes of idempotency keys. Each is a tool result.
const (
	// InProgress: a call with the same key is still running. Retry the
	// same call, with the same key, after a backoff.
	InProgress Code = "in_progress"
	// IdempotencyConflict: the key was used, within its window, for a
	// call of the same action with other parameters. The refusal names
	// neither the key nor a parameter. Retry after an edit (a new key).
	IdempotencyConflict Code = "idempotency_conflict"
	// IdempotencyKeyRequired: the action wants a key and the call has
	// none. Retry after an edit (with a key).
	IdempotencyKeyRequired Code = "idempotency_key_required"
	// OutcomeUnknown: the process running the call under this key (or
	// the task) stopped before the call ended, and a replica of its
	// origin settled it afterwards (sqlstore.Store.SettleOrphans). Its
	// unit never committed, so its changes to the store's database were
	// not kept; whatever its body did outside that database (a payment, a
	// message) may have happened. Never retry: the same key answers it
	// again, and a new call (with a new key) is safe only once the caller
	// has checked that the first one did not take effect.
	OutcomeUnknown Code = "outcome_unknown"
)

// Domain is the key [Policies] uses for every body's own code (a domain
// refusal): a tool result, never retried. The registry never raises it.
const Domain Code = "domain"
