package actions

import (
	"fmt"
	"runtime/debug"
)

// panicError carries a recovered panic's value and stack for the host.
type panicError struct {
	where string
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("actions: panic in %s: %v\n%s", e.where, e.value, e.stack)
}

// panicRefusal turns a recovered panic into an internal refusal. The panic
// value and stack stay in the refusal's cause (errors.Unwrap), never in its
// message.
func panicRefusal(where string, p any) *Refusal {
	r := NewRefusal(CodeInternal, "the "+where+" failed")
	r.cause = &panicError{where: where, value: p, stack: debug.Stack()}
	return r
}
