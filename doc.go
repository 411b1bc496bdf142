// Package actions is an action registry for host services: each action is
// declared once, with a JSON Schema 2020-12 for its parameters, and every
// call is checked before its body runs and recorded as a replayable run
// entry in RFC 8785 canonical JSON. Visible actions are published as MCP
// tools (see [Registry.Tools] and the mcpserver package), or as the tools
// of a model provider's API (package profiles: OpenAI, Anthropic,
// Gemini), whose calls come back through the same [Registry].
//
// Every entry point is a thin wrapper of one service call,
// [Registry.Run] with a [Call]: an MCP tool, the batch tool, a model API's
// tool call, a person's confirmation ([Registry.Decide]), a replay
// ([Registry.Replay]), the host's own Go code. The life of one call:
//
//  1. look the action up by id ("namespace/name"), or refuse unknown_action;
//     then the gate checks who calls ([identity.Caller]: surface, capability,
//     token scope, serving, read-only, rate), before any parameter is
//     looked at;
//  2. copy the parameters into JSON's Go types (the caller's value is never
//     changed), fill the schema's defaults, and validate, listing every
//     breach in one invalid_parameters refusal;
//  3. resolve each ref value through the registry's [RefResolver];
//  4. hold the call as a pending change when its action needs a person's
//     confirmation, or run the body, which receives the call's [Trace];
//  5. keep the call's [store.Record] (its [store.RunEntry] and [store.Audit]) with what the
//     body changed, in one unit of the registry's [store.Store] (a [RunLog] in
//     memory, sqlstore in a database transaction), then hand it to
//     Options.OnRecord.
//
// Declare actions with [New] and [Registry.Register], or with [Typed] for
// a body that takes and returns Go values (schemas inferred from the
// types, results checked against an output schema), or bind a JSON
// manifest with [Registry.Bind]; check parameters alone with
// [CompileParameters]; run call-only scripts with a [Batch] in
// [Call].Batch; test a body alone with [NewTrace]; serialise with
// [CanonicalJSON]. Every transport takes a *[Registry].
//
// Errors: every refusal is a *[Refusal] with a code, a [codes.Code] of
// package codes (codes.InvalidParameters, codes.Timeout, ...); for every
// error the library returns, errors.Is(err, X) holds exactly when
// [CodeOf](err) is X, and each code has a published transport and retry
// policy ([codes.PolicyOf]). Limits on sizes and depths are in [Limits];
// docs/ in the repository has a page per concept.
package actions
