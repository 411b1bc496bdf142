// The refusals of a program as a whole.

package programs

// Code is the code of a program's refusal. A Code is an error, so that
// errors.Is(err, programs.CodeTimeLimit) tests a refusal's code.
type Code string

// The codes of [Error].
const (
	CodeTooLarge    Code = "program_too_large"        // over MaxProgramBytes, or not a program body
	CodeTimeLimit   Code = "program_time_limit"       // ran past MaxTime
	CodeMemoryLimit Code = "program_memory_limit"     // allocated past MaxMemoryBytes
	CodeCallLimit   Code = "program_call_limit"       // called more than MaxCalls actions
	CodeOutputLimit Code = "program_output_too_large" // a result over MaxOutputBytes, or without JSON form
	CodeFailed      Code = "program_failed"           // threw and did not catch it
	CodeCancelled   Code = "cancelled"                // its context ended
)

func (c Code) Error() string { return string(c) }

// Error is a program's refusal. Its message never holds the program's
// text or values; what the program threw is in Thrown, for the caller
// that wrote it.
type Error struct {
	Code    Code
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
