package actions

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Code names why a call or a registration was refused. The codes are the
// reference's ActionError codes, plus internal for a recovered panic and
// cancelled for a call whose caller gave up. A body
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
	// schema (the plugin SDK seed's output-invalid). The body ran; the
	// result is withheld, and the issues are for the host (errors.As
	// with *OutputError).
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
	m := map[Code]Policy{CodeDomain: PolicyOf("")}
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

// Issue is one breach found in a call or a registration, such as one
// schema keyword that failed. Message never contains a value of the
// parameters; it may name what the caller chose as names: an action id,
// or a batch's own result names (unknown_reference: "no earlier step is
// named p").
type Issue struct {
	// Path is the RFC 6901 JSON Pointer of the value at fault: into the
	// parameters for invalid_parameters ("" is the whole object), into
	// the schema for constraint_violation, into the batch for script steps.
	Path string `json:"path"`
	// Keyword is what failed: the JSON Schema keyword ("required",
	// "type", "ref", "default", ...); "json" for text that is not I-JSON;
	// at registration "id", "run" (a nil body), "body" or "definition"
	// (a manifest entry without its other half) or the schema keyword; in
	// a batch the key at fault ("commands", "call", "with", "as",
	// "result"); "call" for a nested call too deep.
	Keyword string `json:"keyword"`
	// Message says what was expected, in lower case, with limits and
	// keywords but no submitted value.
	Message string `json:"message"`
}

// Refusal is the error of a refused call or registration. It carries what a
// caller (often a model) needs to act: the code, whether to retry, how a
// connector should deliver it, and the next thing to do.
//
// A literal &Refusal{Code: c} behaves: its empty Retry and Transport stand
// for the code's policy (see [Refusal.Policy]), and Error is never empty.
//
// Use errors.Is with a code (CodeInvalidParameters, ...) to test the
// code, and errors.As to read the fields:
//
//	var r *actions.Refusal
//	if errors.As(err, &r) { log.Print(r.Code, r.Issues) }
type Refusal struct {
	Code       Code      `json:"code"`
	Message    string    `json:"message"`          // lower case, no submitted value
	Issues     []Issue   `json:"issues,omitempty"` // sorted by path, then keyword
	Retry      Retry     `json:"retry"`
	Transport  Transport `json:"transport"`
	NextAction string    `json:"nextAction,omitempty"` // one sentence for a model

	// Set by the gate (docs/gate.md): Challenge is the RFC 6750 bearer
	// challenge of insufficient_scope, the value of a WWW-Authenticate
	// header, and Scopes the scopes the call needed; RetryAt is when a
	// rate_limited call may pass; Pending is the receipt of a call held
	// by confirmation_required.
	Challenge string    `json:"challenge,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
	Pending   *Receipt  `json:"pending,omitempty"`

	// cause is kept for the host (a recovered panic's value and stack, a
	// wrapped error) and never rendered into Message.
	cause error
}

// NewRefusal returns a refusal with the code's policy and the given
// message. A body returns one to refuse a call on its own terms (a domain
// refusal); set Retry and NextAction on the result to say more.
func NewRefusal(code Code, message string) *Refusal {
	p := PolicyOf(code)
	return &Refusal{Code: code, Message: message, Retry: p.Retry, Transport: p.Transport, NextAction: nextActionOf(code)}
}

// Policy returns how the refusal is delivered: its Transport and Retry, or
// for each one left empty, that of its code ([PolicyOf]).
func (r *Refusal) Policy() Policy {
	p := PolicyOf(r.Code)
	if r.Transport != "" {
		p.Transport = r.Transport
	}
	if r.Retry != "" {
		p.Retry = r.Retry
	}
	return p
}

// Error returns "code: message: path message; path message", the code
// alone when there is nothing else, and "internal" for an empty code.
func (r *Refusal) Error() string {
	if r == nil {
		return "actions: nil refusal"
	}
	var b strings.Builder
	if r.Code == "" {
		b.WriteString(string(CodeInternal))
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
	if c, ok := target.(Code); ok {
		return c == sentinelOf(r.Code)
	}
	return r.cause != nil && errors.Is(r.cause, target)
}

// As finds target in the cause, so that errors.As reaches an
// *[OutputError] or a panic's error through an internal refusal. A
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
	r := NewRefusal(CodeCancelled, "the call was cancelled before it ended")
	r.cause = err
	return r
}

// storeFailure is the internal refusal of a store's own failure.
func storeFailure(err error) *Refusal {
	r := NewRefusal(CodeInternal, "the call's unit of work could not be kept")
	r.cause = err
	return r
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

// CodeOf returns the code an error carries: a *Refusal's, that of any
// error with a Code() string method, cancelled for an error whose chain
// holds context.Canceled or context.DeadlineExceeded, or internal for
// another plain error, a typed nil, an empty code or a Code method that
// panics. It returns "" for a nil error. It is the code a run entry
// records.
func CodeOf(err error) (code Code) {
	if err == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			code = CodeInternal
		}
	}()
	var r *Refusal
	if errors.As(err, &r) {
		if r == nil || r.Code == "" {
			return CodeInternal
		}
		return r.Code
	}
	var d *Divergence
	if errors.As(err, &d) {
		return CodeDiverged
	}
	var c interface{ Code() string }
	if errors.As(err, &c) {
		if s := c.Code(); s != "" {
			return Code(s)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CodeCancelled
	}
	return CodeInternal
}

func refusef(code Code, message string, issues ...Issue) *Refusal {
	r := NewRefusal(code, message)
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
// how many there were and the first ones are listed.
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
	r := NewRefusal(CodeInternal, "the "+where+" failed")
	r.cause = &panicError{where: where, value: p, stack: debug.Stack()}
	return r
}

// unknownAction is the refusal of a call to an id no action has. It names
// nothing: an id is submitted text.
func unknownAction() *Refusal {
	return NewRefusal(CodeUnknownAction, "no action is registered under this id")
}
