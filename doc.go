// Package actions is an action registry for host services: each action is
// declared once, with a JSON Schema 2020-12 for its parameters, and every
// call is checked before its body runs and recorded as a replayable run
// entry in RFC 8785 canonical JSON. Visible actions are published as MCP
// tools (see [Registry.Tools] and the mcpserver package), or as the tools
// of a model provider's API ([Registry.Export] with a [Profile]: OpenAI,
// Anthropic, Gemini), whose calls come back through
// [Registry.RunToolCall].
//
// The life of one call, [Registry.Run]:
//
//  1. look the action up by id ("namespace/name"), or refuse unknown_action;
//     then the gate checks who calls ([Caller]: surface, capability,
//     token scope, serving, read-only, rate), before any parameter is
//     looked at;
//  2. copy the parameters into JSON's Go types (the caller's value is never
//     changed) and fill the schema's defaults;
//  3. validate, listing every breach in one invalid_parameters refusal;
//  4. resolve each ref value through the host's [RefResolver];
//  5. hold the call as a pending change when its action needs a person's
//     confirmation ([Registry.Confirm] runs it later), or run the body;
//     then record a [RunEntry] and hand it to [Host].OnEntry, with an
//     [Audit] of who called to [Host].OnAudit.
//
// Declare actions with [New] and [Registry.Register], or with [Typed] for
// a body that takes and returns Go values (schemas inferred from the
// types, results checked against an output schema), or bind a JSON
// manifest with [Registry.Bind]; check parameters alone with
// [CompileParameters]; run call-only scripts with [Registry.RunBatch];
// test a body alone with [NewTrace]; replay a recorded entry with
// [Registry.Replay]; serialise with [CanonicalJSON]. Every
// refusal is a *[Refusal] with a code that errors.Is matches against the
// sentinels (ErrInvalidParameters, ...), and a published transport and
// retry policy ([PolicyOf]).
//
// The registry opens no transaction: a host wraps a call or a batch in its
// own and rolls it back when an error comes back. Limits on sizes and
// depths are in [Limits]; docs/ in the repository has a page per concept.
package actions
