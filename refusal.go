package actions

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/actionreg/actions/codes"
)

// Refusal is the error of a refused call or registration. It carries what a
// caller (often a model) needs to act: the code, whether to retry, how a
// connector should deliver it, and the next thing to do.
//
// A literal &Refusal{Code: c} behaves: its empty Retry and Transport stand
// for the code's policy (see [Refusal.Policy]), and Error is never empty.
//
// Use errors.Is with a code (codes.InvalidParameters, ...) to test the
// code, and errors.As to read the fields:
//
//	var r *actions.Refusal
//	if errors.As(err, &r) { log.Print(r.Code, r.Issues) }
type Refusal struct {
	Code       codes.Code      `json:"code"`
	Message    string          `json:"message"`          // lower case, no submitted value
	Issues     []Issue         `json:"issues,omitempty"` // sorted by path, then keyword
	Retry      codes.Retry     `json:"retry"`
	Transport  codes.Transport `json:"transport"`
	NextAction string          `json:"nextAction,omitempty"` // one sentence for a model

	// Set by the gate (docs/gate.md): Challenge is the RFC 6750 bearer
	// challenge of insufficient_scope, the value of a WWW-Authenticate
	// header, and Scopes the scopes the call needed; RetryAt is when a
	// rate_limited call may pass; Pending is the receipt of a call held
	// by confirmation_required, nil when nothing was held (the caller
	// has no principal, so nobody could confirm the call).
	Challenge string    `json:"challenge,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
	Pending   *Receipt  `json:"pending,omitempty"`
	// Reason, on rejected, is the reason the person gave for rejecting
	// the change ([Decision].Reason): the person's words, for the
	// caller to read; the rejection's retry is never: do not send the
	// same call again.
	Reason string `json:"reason,omitempty"`

	// cause is kept for the host (a recovered panic's value and stack, a
	// wrapped error) and never rendered into Message.
	cause error
}

// NewRefusal returns a refusal with the code's policy and the given
// message. A body returns one to refuse a call on its own terms (a domain
// refusal); set Retry and NextAction on the result to say more.
func NewRefusal(code codes.Code, message string) *Refusal {
	p := codes.PolicyOf(code)
	return &Refusal{Code: code, Message: message, Retry: p.Retry, Transport: p.Transport, NextAction: nextActionOf(code)}
}

// Policy returns how the refusal is delivered: its Transport and Retry, or
// for each one left empty, that of its code ([codes.PolicyOf]).
func (r *Refusal) Policy() codes.Policy {
	p := codes.PolicyOf(r.Code)
	if r.Transport != "" {
		p.Transport = r.Transport
	}
	if r.Retry != "" {
		p.Retry = r.Retry
	}
	return p
}

// Error returns "code: message: path message; path message", the code
// alone when there is nothing else, and "internal" for an empty code. It
// names no package, as the text of *fs.PathError names none: a refusal
// is an answer the caller reads (a body's own refusal as much as the
// registry's), and what wraps it adds its own context ("profiles: ...").
// The errors of this package that are not refusals read "actions: ...".
func (r *Refusal) Error() string {
	if r == nil {
		return "actions: nil refusal"
	}
	var b strings.Builder
	if r.Code == "" {
		b.WriteString(string(codes.Internal))
	}
	b.WriteString(string(r.Code))
	if r.Message != "" {
		b.WriteString(": ")
		b.WriteString(r.Message)
	}
	writeIssues(&b, r.Issues)
	return b.String()
}

// writeIssues appends ": path message; path message" for the issues of an
// error's text.
func writeIssues(b *strings.Builder, issues []Issue) {
	for i, is := range issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if is.Path != "" {
			b.WriteString(is.Path)
			b.WriteString(" ")
		}
		b.WriteString(is.Message)
	}
}

// Is reports whether target is the sentinel of the refusal's code. It
// never matches another code's sentinel, whatever the cause holds, so
// that errors.Is(err, X) holds exactly when [CodeOf](err) is X; for
// any other target it looks in the cause (context.Canceled in a
// cancelled refusal, a store's error in an internal one).
func (r *Refusal) Is(target error) bool {
	if r == nil {
		return false
	}
	if c, ok := target.(codes.Code); ok {
		return c == sentinelOf(r.Code)
	}
	return r.cause != nil && errors.Is(r.cause, target)
}

// As finds target in the cause, so that errors.As reaches a store's or
// a panic's error through an internal refusal. A
// *Refusal target finds the refusal itself, never one in its cause.
func (r *Refusal) As(target any) bool {
	if r == nil || r.cause == nil {
		return false
	}
	if _, ok := target.(**Refusal); ok {
		return false
	}
	return errors.As(r.cause, target)
}

// Cause returns what caused the refusal, for the host: the refusal a
// nested call gave the body, a recovered panic with its stack, the
// forbidden refusal behind an unknown_action, a store's error. It is nil
// for most refusals, and never reaches the caller.
func (r *Refusal) Cause() error {
	if r == nil {
		return nil
	}
	return r.cause
}

// isCancel reports whether err's chain holds the end of a context. A
// chain whose Unwrap panics (a typed nil with an Unwrap method) holds
// none.
func isCancel(err error) (yes bool) {
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// cancelRefusal turns a bare context error into the cancelled refusal,
// its cause the context's error; any other error is returned as it is.
func cancelRefusal(err error) error {
	if err == nil || asRefusal(err) != nil || !isCancel(err) {
		return err
	}
	r := NewRefusal(codes.Cancelled, "the call was cancelled before it ended")
	r.cause = err
	return r
}

// storeFailure is the internal refusal of a store's own failure.
func storeFailure(err error) *Refusal {
	r := NewRefusal(codes.Internal, "the call's unit of work could not be kept")
	r.cause = err
	return r
}

// CodeOf returns the code an error carries: a *Refusal's, a body's own
// (domain) [codes.Code] returned as the error itself (errors.Is(err,
// codes.Code("tank_empty")) and CodeOf(err) == "tank_empty" agree; a code the
// registry raises itself, such as in_progress, returned bare by a body is
// internal: only the registry refuses with those), that of any error
// with a Code() string method, cancelled for an error whose chain
// holds context.Canceled or context.DeadlineExceeded, or internal for
// another plain error, a typed nil, an empty code or a Code method that
// panics. It returns "" for a nil error. It is the code a run entry
// records.
func CodeOf(err error) (code codes.Code) {
	if err == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			code = codes.Internal
		}
	}()
	var r *Refusal
	if errors.As(err, &r) {
		if r == nil || r.Code == "" {
			return codes.Internal
		}
		return r.Code
	}
	if errors.Is(err, codes.Diverged) { // a *Divergence
		return codes.Diverged
	}
	var bare codes.Code // a body's own code returned as the error itself
	if errors.As(err, &bare) && bare != "" && !registryCode(bare) {
		return bare
	}
	var c interface{ Code() string }
	if errors.As(err, &c) {
		if s := c.Code(); s != "" {
			return codes.Code(s)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return codes.Cancelled
	}
	return codes.Internal
}

// refusef makes the refusal of code with message and issues, each
// issue's path clipped (see [clipPath]), at most maxIssues of them.
func refusef(code codes.Code, message string, issues ...Issue) *Refusal {
	if len(issues) > maxIssues {
		message, issues = capIssues(message, issues)
	}
	r := NewRefusal(code, message)
	for i := range issues {
		issues[i].Path = clipPath(issues[i].Path)
	}
	r.Issues = issues
	return r
}

// asRefusal finds the *Refusal in err's chain, if any. A chain whose
// Unwrap panics (a typed nil with an Unwrap method) holds none.
func asRefusal(err error) (r *Refusal) {
	defer func() {
		if recover() != nil {
			r = nil
		}
	}()
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// maxIssues bounds the issues of one refusal: past it, the message says
// that there were more and only the first maxIssues are listed, so that a
// request with many faults (a batch of 250,000 bad steps) is answered
// with a refusal of bounded size.
const maxIssues = 100

// capIssues keeps the first maxIssues issues of a sorted list and says so
// in the message.
func capIssues(msg string, issues []Issue) (string, []Issue) {
	if len(issues) <= maxIssues {
		return msg, issues
	}
	return fmt.Sprintf("%s: %d breaches, the first %d listed", msg, len(issues), maxIssues), issues[:maxIssues:maxIssues]
}

// safeCall runs fn and turns a panic into an internal refusal.
func safeCall(where string, fn func()) error {
	return safeCallOf(where, "", fn)
}

// safeCallOf is safeCall for the part where of the action id: the name
// "where id" is written only when fn panics, not on every call.
func safeCallOf(where, id string, fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if id != "" {
				where += " " + id
			}
			err = panicRefusal(where, p)
		}
	}()
	fn()
	return nil
}

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
// value and stack stay in the refusal's cause ([Refusal.Cause]), never in
// its message.
func panicRefusal(where string, p any) *Refusal {
	r := NewRefusal(codes.Internal, "the "+where+" failed")
	r.cause = &panicError{where: where, value: p, stack: debug.Stack()}
	return r
}

// unknownAction is the refusal of a call to an id no action has. It names
// nothing: an id is submitted text.
func unknownAction() *Refusal {
	return NewRefusal(codes.UnknownAction, "no action is registered under this id")
}

// nilContext refuses a call given a nil context.Context (a fault of the
// host's code: pass context.Background() or a request's context).
func nilContext() *Refusal {
	r := internalRefusal("the call was given no context", errNilContext)
	// The host's mistake, not a passing fault: the same call fails again.
	r.Retry = codes.RetryNever
	r.NextAction = "Pass a context.Context that is not nil (context.Background() when there is none)."
	return r
}

var errNilContext = errors.New("actions: nil context.Context")

func internalRefusal(msg string, cause error) *Refusal {
	r := NewRefusal(codes.Internal, msg)
	r.cause = cause
	return r
}
