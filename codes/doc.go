// Package codes names why the registry of package actions refused a call
// or a registration, and how a connector delivers each refusal.
//
// A [Code] is a short snake_case word (invalid_parameters, timeout,
// rate_limited): it is what a run entry records as the error of a refused
// call, what an MCP client reads in a refusal's data, and what a program
// tests with errors.Is. A Code is an error, its own sentinel:
//
//	if errors.Is(err, codes.InvalidParameters) { ... }
//
// holds for a refusal of that code however it was wrapped (the refusal
// type, actions.Refusal, matches the code it carries and no other), and
// a body's own codes (a domain refusal such as codes.Code("tank_empty"))
// match the same way.
//
// Each code has a [Policy]: its [Transport] (a protocol error, when the
// call never happened, or a tool result a model reads and acts on) and
// its [Retry] verdict (never, after an edit of the call, or after a
// backoff). [PolicyOf] gives the policy of one code and [Policies] the
// whole table, for a connector that publishes it. The constants below
// say, each, when the registry raises the code and what its policy is.
//
// The package holds names only: it imports nothing of the registry, so
// a client that reads codes (a connector, a dashboard, a test) need not
// import the registry to name them.
package codes
