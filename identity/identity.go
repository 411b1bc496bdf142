package identity

import (
	"slices"
)

// Caller is who calls, built by the host for each call from what it
// authenticated (a session, a verified token), never from the call's arguments.
// Set it as [github.com/actionreg/actions.Call].Caller; a nil Caller is the
// host itself, which the gate lets through (see
// [github.com/actionreg/actions.Registry.Run]). The token itself is never held:
// only what the host derived from it.
type Caller struct {
	// Principal identifies the person (or service) acting, for rate
	// limits, pending changes and the audit record.
	Principal string `json:"principal"`
	// Capabilities are the capabilities the host derived for this call.
	Capabilities []string `json:"capabilities,omitempty"`
	// Token says the call came with a bearer token; Scopes are then its
	// scopes, and the scope check applies.
	Token  bool     `json:"token,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	// Surface is where the call comes from: ui, mcp or ai. A caller
	// whose surface an action does not offer (an empty or unknown one
	// offers none) is told the action is unknown (unknown_action), the
	// audit keeping forbidden_surface: set it on every caller.
	Surface Surface `json:"surface"`
	// Client is the connected app that called, when one did.
	Client *Client `json:"client,omitempty"`
	// PendingChange is the id of the pending change this call confirms.
	// [github.com/actionreg/actions.Registry.Decide] sets it; a host that sets
	// it itself confirms nothing.
	PendingChange string `json:"pendingChange,omitempty"`
}

// Can reports whether the caller holds the capability c ("" is held by
// every caller). A nil Caller, the host, holds every capability.
func (c *Caller) Can(capability string) bool {
	return c == nil || capability == "" || slices.Contains(c.Capabilities, capability)
}

// Client is the connected app a call came through: its id and host, never
// its token.
type Client struct {
	ID   string `json:"id"`
	Host string `json:"host,omitempty"`
}

// Surface is where an action may be offered: ui is the host's own
// screens, in process; mcp is a connected MCP client; ai is a model the
// host drives itself.
type Surface string

// The surfaces.
const (
	SurfaceUI  Surface = "ui"
	SurfaceMCP Surface = "mcp"
	SurfaceAI  Surface = "ai"
)
