package actions

import (
	"fmt"
	"slices"
	"strings"
)

// Effect is what an action does to the host's records: read, write or
// delete (the plugin SDK seed's ActionEffect).
type Effect string

// The effects. An empty Effect means EffectWrite.
const (
	EffectRead   Effect = "read"
	EffectWrite  Effect = "write"
	EffectDelete Effect = "delete"
)

// Surface is where an action may be offered (the seed's ActionSurface):
// ui is the host's own screens, in process; mcp is a connected MCP client;
// ai is a model the host drives itself.
type Surface string

// The surfaces.
const (
	SurfaceUI  Surface = "ui"
	SurfaceMCP Surface = "mcp"
	SurfaceAI  Surface = "ai"
)

// allSurfaces is what a definition without Surfaces is offered on.
var allSurfaces = []Surface{SurfaceUI, SurfaceMCP, SurfaceAI}

// PersonalData is a category of personal data an action can touch (the
// seed's ACTION_PERSONAL_DATA), in the host's own words ("email",
// "health", "account"...): a non-empty identifier of letters, digits and
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

// DeclaredRefusal is a domain refusal an action's body may raise (the
// seed's ActionErrorSpec): its code, snake_case like the registry's own,
// and whether the same call could ever pass.
type DeclaredRefusal struct {
	Code  Code  `json:"code"`
	Retry Retry `json:"retry"`
}

// EffectOf returns the definition's effect: write when Effect is empty.
func (d *Definition) EffectOf() Effect {
	if d.Effect != "" {
		return d.Effect
	}
	return EffectWrite
}

// IsDestructive reports what MCP's destructiveHint says: a delete, or a
// write that is not additive.
func (d *Definition) IsDestructive() bool {
	switch d.EffectOf() {
	case EffectRead:
		return false
	case EffectDelete:
		return true
	}
	return !d.Additive
}

// Offers reports whether the definition may be offered on surface s: s is
// in Surfaces (every surface when Surfaces is nil), and s is not mcp or ai
// for an action touching protected personal data.
func (d *Definition) Offers(s Surface) bool {
	if (s == SurfaceMCP || s == SurfaceAI) && slices.Contains(d.PersonalData, PersonalProtected) {
		return false
	}
	surfaces := d.Surfaces
	if surfaces == nil {
		surfaces = allSurfaces
	}
	return slices.Contains(surfaces, s)
}

// legacy is the old spelling of a definition's policy, as a manifest
// may still write it: "kind" (read or action), "destructive" and
// "exposure" (visible or hidden).
type legacy struct {
	Kind        string `json:"kind,omitempty"`
	Destructive *bool  `json:"destructive,omitempty"`
	Exposure    string `json:"exposure,omitempty"`
}

// fold rewrites the old spelling old into the policy fields, so that each
// fact is held once, and checks the policy. A definition in the old
// spelling keeps its old meaning: kind read is effect read, kind action
// (or none) is effect write, additive unless destructive; exposure
// hidden is no surface, visible is every surface. A definition in neither
// spelling is a write that is not additive (MCP reads a missing
// destructiveHint as true, so a write says for itself that it destroys
// nothing).
//
// Errors (*Refusal constraint_violation, an issue per fault): a fact
// declared in both spellings; an effect, surface or personal-data
// category outside its list; protected personal data offered on mcp or
// ai; a read that needs confirmation; an action needing confirmation not
// offered on ui; an additive delete; a declared refusal without a
// snake_case code, with a code the registry raises itself, listed twice,
// or with an unknown retry; an alias that is not an id (namespace/name),
// is the action's own id, or is listed twice.
func (d *Definition) fold(old legacy) error {
	var issues []Issue
	both := func(path, oldName, newName string) {
		issues = append(issues, Issue{Path: path, Keyword: oldName,
			Message: oldName + " is the old spelling of " + newName + ": declare " + newName + " alone"})
	}
	if old != (legacy{}) {
		if old.Kind != "" && d.Effect != "" {
			both("/kind", "kind", "effect")
		}
		if old.Destructive != nil && d.Additive {
			both("/destructive", "destructive", "additive")
		}
		if old.Exposure != "" && d.Surfaces != nil {
			both("/exposure", "exposure", "surfaces")
		}
		if len(issues) == 0 {
			if d.Effect == "" {
				d.Effect = EffectWrite
				if old.Kind == "read" {
					d.Effect = EffectRead
				}
				d.Additive = d.Effect == EffectWrite && (old.Destructive == nil || !*old.Destructive)
			}
			if old.Exposure == "hidden" {
				d.Surfaces = []Surface{}
			}
		}
	}
	if d.Effect == "" {
		d.Effect = EffectWrite
	}
	issues = append(issues, d.checkPolicy()...)
	if len(issues) > 0 {
		return refusef(CodeConstraintViolation, "the action's policy is refused", sortIssues(issues)...)
	}
	return nil
}

// checkPolicy lists what is wrong with the folded policy fields.
func (d *Definition) checkPolicy() []Issue {
	var issues []Issue
	add := func(path, kw, msg string) { issues = append(issues, Issue{Path: path, Keyword: kw, Message: msg}) }
	switch d.Effect {
	case EffectRead, EffectWrite, EffectDelete:
	default:
		add("/effect", "effect", "the effect must be read, write or delete")
	}
	if d.Effect == EffectRead && d.NeedsConfirmation {
		add("/needsConfirmation", "needsConfirmation", "a read needs no confirmation")
	}
	if d.NeedsConfirmation && !d.Offers(SurfaceUI) {
		// The person confirms on the host's own screen: an action that
		// screen is not offered could never be confirmed there.
		add("/needsConfirmation", "needsConfirmation", "an action that needs confirmation must be offered on the ui surface")
	}
	if d.Effect == EffectDelete && d.Additive {
		add("/additive", "additive", "a delete is never additive")
	}
	for i, s := range d.Surfaces {
		at := fmt.Sprintf("/surfaces/%d", i)
		switch {
		case !slices.Contains(allSurfaces, s):
			add(at, "surfaces", "a surface is ui, mcp or ai")
		case slices.Index(d.Surfaces, s) < i:
			add(at, "surfaces", "the surface is listed twice")
		case (s == SurfaceMCP || s == SurfaceAI) && slices.Contains(d.PersonalData, PersonalProtected):
			add(at, "surfaces", "an action touching protected personal data is never offered on mcp or ai")
		}
	}
	for i, p := range d.PersonalData {
		if !personalCategory(p) {
			add(fmt.Sprintf("/personalData/%d", i), "personalData", "a personal-data category is an identifier of letters, digits and underscores")
		}
	}
	for i, dr := range d.Refusals {
		at := fmt.Sprintf("/refusals/%d", i)
		switch {
		case !isSnakeCode(string(dr.Code)):
			add(at+"/code", "refusals", "a declared refusal's code is snake_case: [a-z][a-z0-9_]*, at most 64 bytes")
		case registryCode(dr.Code):
			add(at+"/code", "refusals", "the code is one the registry raises itself")
		case slices.IndexFunc(d.Refusals, func(o DeclaredRefusal) bool { return o.Code == dr.Code }) < i:
			add(at+"/code", "refusals", "the code is declared twice")
		}
		switch dr.Retry {
		case RetryNever, RetryAfterEdit, RetryAfterBackoff:
		default:
			add(at+"/retry", "refusals", "retry is never, after-edit or after-backoff")
		}
	}
	for i, a := range d.DeprecatedAliases {
		at := fmt.Sprintf("/deprecatedAliases/%d", i)
		switch {
		case checkID(a) != nil:
			add(at, "deprecatedAliases", "an alias is an id: namespace/name, both identifiers")
		case a == d.ID:
			add(at, "deprecatedAliases", "an alias is not the action's own id")
		case slices.Index(d.DeprecatedAliases, a) < i:
			add(at, "deprecatedAliases", "the alias is listed twice")
		}
	}
	return issues
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

// registryCode reports whether the registry raises c itself.
func registryCode(c Code) bool {
	return slices.Contains(registryCodes(), c)
}

// declaredRetry returns the retry the definition declares for a domain
// refusal code, and whether it declares one.
func (d *Definition) declaredRetry(c Code) (Retry, bool) {
	for _, dr := range d.Refusals {
		if dr.Code == c {
			return dr.Retry, true
		}
	}
	return "", false
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
		case RetryAfterEdit:
			verdict = "retry after changing the call"
		case RetryAfterBackoff:
			verdict = "retry later"
		}
		parts[i] = string(r.Code) + " (" + verdict + ")"
	}
	return "It may refuse with: " + strings.Join(parts, ", ") + "."
}

// own folds the definition and gives it its own copy of every policy
// slice, for Register: what the caller keeps is not what the registry
// holds.
func (d *Definition) own() error {
	if err := d.fold(legacy{}); err != nil {
		return err
	}
	d.clonePolicy()
	return nil
}

// clonePolicy gives d its own copy of every policy slice (a nil slice
// stays nil, an empty one empty), so that what the registry hands out
// cannot change what it checks.
func (d *Definition) clonePolicy() {
	if d.Surfaces != nil {
		d.Surfaces = append([]Surface{}, d.Surfaces...)
	}
	d.PersonalData = slices.Clone(d.PersonalData)
	d.Refusals = slices.Clone(d.Refusals)
	d.DeprecatedAliases = slices.Clone(d.DeprecatedAliases)
}
