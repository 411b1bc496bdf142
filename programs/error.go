// The refusals of a program as a whole.

package programs

import (
	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// The codes of [Error], as [codes.Code] values: errors.Is(err,
// programs.CodeTimeLimit) tests a program's refusal, whichever entry
// point gave it.
const (
	CodeTooLarge    codes.Code = "program_too_large"        // over MaxProgramBytes, or not a program body
	CodeTimeLimit   codes.Code = "program_time_limit"       // ran past MaxTime
	CodeMemoryLimit codes.Code = "program_memory_limit"     // allocated past MaxMemoryBytes
	CodeCallLimit   codes.Code = "program_call_limit"       // called more than MaxCalls actions
	CodeOutputLimit codes.Code = "program_output_too_large" // a result over MaxOutputBytes, or without JSON form
	CodeFailed      codes.Code = "program_failed"           // threw and did not catch it, or a call was refused
	CodeCancelled              = codes.Cancelled            // its context ended
)

// Error is a program's refusal. Its message never holds the program's
// text or values; what the program threw is in Thrown, for the caller
// that wrote it.
type Error struct {
	Code    codes.Code
	Message string // lower case, no value of the program
	// Thrown is the message of what the program threw (or of its syntax
	// error), as the program's engine gives it: the program's own words.
	Thrown string
	// Call is the 1-based number of the refused call whose error the
	// program did not catch; 0 when the error came from no call.
	Call  int
	cause error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is e's Code.
func (e *Error) Is(target error) bool { return target == e.Code }

// Unwrap returns the refused call's error (for program_failed after a
// refused call) or ctx's cause (for cancelled), else nil.
func (e *Error) Unwrap() error { return e.cause }

// As gives e as an *actions.Refusal (its code and message, retry
// after-edit, or never for cancelled), so that a transport that knows
// refusals only (an MCP server) answers it as one.
func (e *Error) As(target any) bool {
	p, ok := target.(**actions.Refusal)
	if !ok {
		return false
	}
	r := actions.NewRefusal(e.Code, e.Message)
	if e.Code == CodeCancelled {
		r = actions.NewRefusal(codes.Cancelled, e.Message)
	} else {
		r.Retry = codes.RetryAfterEdit
	}
	*p = r
	return true
}
