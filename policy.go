package actions

import (
	"strings"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// Effect is what an action does to the host's records: read, write or
// delete.
type Effect string

// The effects. An empty Effect means EffectWrite.
const (
	EffectRead   Effect = "read"
	EffectWrite  Effect = "write"
	EffectDelete Effect = "delete"
)

// allSurfaces is what a definition without Surfaces is offered on.
var allSurfaces = []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP, identity.SurfaceAI}

// PersonalData is a category of personal data an action can touch
// (docs/gate.md), in the host's own words ("email", "health",
// "account"...): a non-empty identifier of letters, digits and
// underscores. The registry reads one category itself: PersonalProtected.
type PersonalData string

// PersonalProtected marks an action that can return a field of a person
// whose personal data is protected (a protected identity): it is never
// offered on the mcp or ai surfaces.
const PersonalProtected PersonalData = "protected"

// personalCategory reports whether p is a well-formed category name.
func personalCategory(p PersonalData) bool {
	return p != "" && strings.IndexFunc(string(p), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) < 0
}

// DeclaredRefusal is a domain refusal an action's body may raise
// (docs/refusals.md): its code, snake_case like the registry's own,
// and whether the same call could ever pass.
type DeclaredRefusal struct {
	Code  codes.Code  `json:"code"`
	Retry codes.Retry `json:"retry"`
}

// legacy is the old spelling of a definition's policy, as a manifest
// may still write it: "kind" (read or action), "destructive" and
// "exposure" (visible or hidden).
type legacy struct {
	Kind        string `json:"kind,omitempty"`
	Destructive *bool  `json:"destructive,omitempty"`
	Exposure    string `json:"exposure,omitempty"`
}

func isSnakeCode(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// refusalsSentence is the sentence a tool description gains for the
// declared refusals, or "" when none is declared.
func refusalsSentence(rs []DeclaredRefusal) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		verdict := "do not retry"
		switch r.Retry {
		case codes.RetryAfterEdit:
			verdict = "retry after changing the call"
		case codes.RetryAfterBackoff:
			verdict = "retry later"
		}
		parts[i] = string(r.Code) + " (" + verdict + ")"
	}
	return "It may refuse with: " + strings.Join(parts, ", ") + "."
}
