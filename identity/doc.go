// Package identity holds who calls an action: the [Caller] a host builds
// for each call from what it authenticated, the connected [Client] it came
// through, and the [Surface] (ui, mcp, ai) it reached the registry on.
//
// The registry in package github.com/actionreg/actions takes a Caller on
// every call, decision and task, and records it in the call's audit; the
// gate checks its surface, capabilities and token scopes. A nil *Caller is
// the host itself.
package identity
