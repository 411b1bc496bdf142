package mcpserver

import (
	"context"
	"errors"
	"fmt"
)

// CodeRequestCancelled is the JSON-RPC error code of the answer to a call
// that was cancelled before it ended, when the client still reads one
// (MCP defines no code for it; this is the Language Server Protocol's
// RequestCancelled, outside JSON-RPC's reserved range). The error's data
// holds {"code": "cancelled", "retry": "after-backoff", "nextAction"}.
const CodeRequestCancelled = -32800

// cancelledMessage is all a client learns of a cancelled call.
const cancelledMessage = "cancelled: the call was cancelled before it ended"

// cancelled reports whether err is a context's own error: the call's
// context was done, so the call ended because its caller gave up, went
// away, or the server ended it.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// cancelCause is what OnError hears of a cancelled call: err, and why the
// call's context was done when the server knows (the client went away, the
// session ended, the server is shutting down).
func cancelCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if rctx, ok := ctx.Value(requestKey{}).(context.Context); ok && rctx.Err() != nil && cause == context.Canceled {
		cause = ErrClientGone // the SDK saw the stateless request end first
	}
	if cause == nil || errors.Is(err, cause) {
		return fmt.Errorf("mcpserver: call cancelled: %w", err)
	}
	return fmt.Errorf("mcpserver: call cancelled: %w (%w)", err, cause)
}
