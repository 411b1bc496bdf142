// What the registry adds to each code of package codes: the sentinel
// errors.Is matches, and the next action a model reads.

package actions

import "github.com/actionreg/actions/codes"

// sentinelOf is the sentinel of c: c itself, internal for "".
func sentinelOf(c codes.Code) error {
	if c == "" {
		return codes.Internal
	}
	return c
}

// registryCode reports whether the registry raises c itself: a key of
// [codes.Policies] other than the domain's.
func registryCode(c codes.Code) bool {
	if c == codes.Domain {
		return false
	}
	_, ok := codes.Policies()[c]
	return ok
}

// gateCode reports whether the gate raises c.
func gateCode(c codes.Code) bool {
	switch c {
	case codes.ForbiddenSurface, codes.ForbiddenCapability, codes.InsufficientScope,
		codes.NotServing, codes.ReadOnly, codes.RateLimited, codes.ConfirmationRequired,
		codes.UnknownChange, codes.Rejected, codes.ForbiddenProposer, codes.StaleChange:
		return true
	}
	return false
}

// nextActionOf is the sentence a refusal of c tells a model to do next,
// or "" for a body's own code.
func nextActionOf(c codes.Code) string {
	switch c {
	case "":
		return nextActionOf(codes.Internal)
	case codes.InvalidParameters:
		return "Fix the parameters named in the issues and call again."
	case codes.UnknownAction:
		return "List the available tools and call one of them."
	case codes.InvalidScriptStep:
		return "Keep only call steps with call, with and as, then run the batch again."
	case codes.UnknownReference:
		return "Name only results set by an earlier step, then run the batch again."
	case codes.Internal:
		return "Try again later; if it keeps failing, report it."
	case codes.Cancelled:
		return "The call was cancelled before it ended; call again if it is still wanted."
	case codes.DuplicateName, codes.ConstraintViolation:
		return "Fix the definition; calling again will not help."
	case codes.Timeout:
		return "The action took too long; try again later, or with less to do."
	case codes.OutputInvalid:
		return "Do not retry: the action's result broke its own contract; tell the user the action failed."
	case codes.ForbiddenSurface, codes.ForbiddenCapability:
		return "Do not call this action; it is not offered to this caller."
	case codes.InsufficientScope:
		return "Ask the user to grant the scope named in the challenge, then call again."
	case codes.NotServing:
		return "Tell the user the action is not available now."
	case codes.ReadOnly, codes.RateLimited:
		return "Wait, then make the same call again."
	case codes.ConfirmationRequired:
		return "Tell the user the change waits for their confirmation; do not call again."
	case codes.UnknownChange:
		return "Propose the change again by calling the action."
	case codes.StaleChange:
		return "Reject the change and propose it again: what it would do now is not what the person was shown."
	case codes.ForbiddenProposer:
		return "Ask another person who may approve the change to decide it."
	case codes.Rejected:
		return "Tell the user the change was rejected and nothing ran; do not call again unless asked."
	case codes.InProgress:
		return "The same call is still running: wait, then send it again with the same idempotency key."
	case codes.IdempotencyConflict:
		return "This idempotency key was used for another call: use a new key for a new call, or resend the first call as it was."
	case codes.IdempotencyKeyRequired:
		return "Call again with an idempotency key: a new random string for each intended change, reused only to retry that same call."
	case codes.OutcomeUnknown:
		return "Do not send this call again blindly: it may have taken effect. Check whether it did; only if it did not, make it again with a new idempotency key."
	}
	return ""
}
