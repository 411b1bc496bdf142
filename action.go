package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/portable"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// Definition declares an action without its body: what a manifest lists.
// Its JSON form is a manifest entry (docs/registry.md).
type Definition struct {
	// ID is "namespace/name", both identifiers ([A-Za-z_][A-Za-z0-9_]*),
	// at most 128 bytes in all (the id becomes the MCP
	// tool name).
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Policy: what the gate checks before the parameters are looked at,
	// and what listings and tool annotations say (docs/gate.md).
	//
	// Capability is the one capability a caller must hold to call the
	// action; empty means none.
	Capability string `json:"capability,omitempty"`
	// Effect is read, write or delete; empty means write.
	Effect Effect `json:"effect,omitempty"`
	// Idempotent: calling twice with the same parameters does what
	// calling once does (MCP idempotentHint).
	Idempotent bool `json:"idempotent,omitempty"`
	// Additive: a write that adds and overwrites nothing a person wrote.
	// MCP's destructiveHint is derived from it: true for a delete and for
	// a write that is not additive, false for a read.
	Additive bool `json:"additive,omitempty"`
	// OpenWorld: the body reaches a system outside this host (MCP
	// openWorldHint).
	OpenWorld bool `json:"openWorld,omitempty"`
	// NeedsConfirmation: a caller's call is checked in full, then held as
	// a pending change until a person confirms it (see
	// [Registry.Decide]). A read may not need confirmation, and an action
	// that needs it must be offered on ui, where the person confirms.
	NeedsConfirmation bool `json:"needsConfirmation,omitempty"`
	// Preview: a caller's call is run before it is held, so that the person
	// sees what it does, not only its arguments. For an action whose body makes
	// calls of its own ([Trace.Call]) decided as it runs, such as a program's:
	// the call runs first in a part of its unit that is then undone (a
	// [store.Savepointer] store's savepoint), its nested calls included, those
	// that need confirmation too; when the action needs confirmation itself or
	// any of those calls does, the call is held whole as one pending change
	// whose [PendingChange].Preview is the entry of that run (every call made,
	// its parameters as they ran and its result), and nothing it wrote is kept.
	// Otherwise the run is kept as the call's own. Confirming runs the body
	// again, giving back the values the preview drew ([Trace.Value], Now,
	// NewID), and keeps it only when its entry is the one shown, compared as
	// [Registry.Replay] compares (stale_change otherwise, nothing kept). Since
	// the body's calls are the caller's own, each also counts the caller's rate
	// limit (GateOptions.Rate), as the caller's call of that action would (the
	// calls the bodies of those actions make count none, as always). Without a
	// Savepointer store a preview cannot be undone, and the action is held as
	// any other (before its body runs) and its nested calls that need
	// confirmation refused. Set in Go: a manifest's JSON declares none.
	Preview bool `json:"-"`
	// Approval, for an action that needs confirmation, says who may
	// decide its held calls and from which surface (see [Approval]); nil
	// means the proposer alone, from the gate's DecideFrom surfaces.
	Approval *Approval `json:"approval,omitempty"`
	// NeedsIdempotencyKey: a caller's call without an idempotency key is
	// refused idempotency_key_required (see [Call].IdempotencyKey): the
	// action's effect reaches outside the store's transaction (mail
	// sent, a card charged), so a retry must be recognised. Its tool
	// says so to the model (docs/database.md).
	NeedsIdempotencyKey bool `json:"needsIdempotencyKey,omitempty"`
	// PersonalData lists the categories of personal data the action can
	// touch (see [PersonalData]); an action offering PersonalProtected is
	// never offered on the mcp or ai surfaces.
	PersonalData []PersonalData `json:"personalData,omitempty"`
	// Surfaces is the allowlist of surfaces the action is offered on
	// (ui, mcp, ai). Nil means all three; an empty, non-nil slice
	// (JSON []) means none: only the host and other actions call it.
	Surfaces []identity.Surface `json:"surfaces,omitzero"`
	// Refusals are the domain refusals the body may raise, each with its
	// retry verdict; a body refusing with a code not listed gets never.
	// They are listed, in one sentence, in the tool's description.
	Refusals []DeclaredRefusal `json:"refusals,omitempty"`
	// AppOnly marks a helper tool of an MCP Apps view (the MCP Apps
	// extension, io.modelcontextprotocol/ui): a tool the view calls, as
	// a quantity changed or a page turned, and the model never should.
	// Its tool says so in _meta.ui.visibility ["app"], which a client of
	// the extension reads to keep it out of the model's tool list; it is
	// never offered on the ai surface (a model API's tools: profiles'
	// exports leave it out, a model's call is refused as unknown), and
	// mcpserver's tool_search never finds it. It is offered on mcp,
	// where the view calls it: a listing the client honours, not a
	// security boundary (the gate decides who may call). Registration
	// refuses one whose surfaces list ai or leave out mcp.
	AppOnly bool `json:"appOnly,omitempty"`
	// DeprecatedAliases are old ids the action still answers to. A call
	// by an alias runs the action and is recorded under its id (the
	// alias is in the [store.Audit]); aliases are never listed as tools.
	DeprecatedAliases []string `json:"deprecatedAliases,omitempty"`

	// Parameters is a JSON Schema 2020-12 whose root is "type": "object",
	// given as a decoded Go value (map[string]any), as JSON text
	// (json.RawMessage, []byte or string), or nil for an action that takes
	// no parameters. See docs/parameters.md for the keywords accepted.
	Parameters any `json:"parameters,omitempty"`
	// Writes lists the model schemas the action may write. The registry
	// keeps it for hosts and does not read it.
	Writes []string `json:"writes,omitempty"`
	// OutputSchema is a JSON Schema 2020-12 that every result of the
	// action must satisfy (MCP's Tool.outputSchema), in the forms
	// Parameters takes; its root may be any schema object. Nil means no
	// contract: results are not checked. [Typed] infers it from the
	// result's Go type. See docs/typed.md for what a breach gives.
	OutputSchema any `json:"outputSchema,omitempty"`
	// MaxResultBytes bounds this action's results as they reach a
	// caller, in bytes of canonical JSON, in place of the registry's
	// Limits.MaxResultBytes; zero keeps the registry's, negative means
	// no bound. See [bound.Bounded] for what a result over it becomes.
	MaxResultBytes int `json:"maxResultBytes,omitempty"`
	// PageKey, for an action that pages by key ([PageAfter]), names the
	// member of each listed item whose value orders the list (a string,
	// or a number given as its JSON text): when a result over its bound
	// is cut, the next cursor stands for the last item kept, as the
	// body's own "next" does. Empty: the action pages by offset
	// ([Paginate]). See docs/pagination.md.
	PageKey string `json:"pageKey,omitempty"`
	// Timeout is how long the body may run: past it the body's context
	// ends and the call is refused with timeout ([codes.Timeout]), its
	// unit rolled back. Zero means the registry's Options.Timeout;
	// negative means no limit. A nested call runs within the smaller of
	// its own limit and what is left of its caller's. A body with a
	// limit runs on a goroutine of its own: the call is answered timeout
	// at the deadline, and its unit rolled back then, even if the body
	// ignores ctx and runs on (its later statements on the unit's
	// transaction fail; docs/registry.md, time limits). A body that
	// returns after the deadline by the registry's clock is refused all
	// the same. Set in Go: a manifest's JSON declares none.
	Timeout time.Duration `json:"-"`
	// Long: a call may run for minutes (an import, a report). Over MCP,
	// a client that declares the Tasks extension on its call gets a task
	// handle at once and polls for the answer (see [Registry.Start] and
	// docs/tasks.md); any other caller waits for the answer as usual.
	// Set in Go: a manifest's JSON declares none.
	Long bool `json:"-"`
}

// Action is a definition with its body. The body receives the call's
// context (which carries the store's unit, such as sqlstore.Tx), the
// call's [Trace], and the checked parameters: a copy the body may keep or change, holding only JSON's Go types
// (map[string]any, []any, string, bool, nil and json.Number). A number
// keeps the text it was given in: JSON Schema counts 1.0 and 1e2 as
// integers, so json.Number.Int64 may fail on a value "type": "integer"
// accepted.
//
// Run's result is recorded in the run entry as canonical JSON: it must be a
// value [CanonicalJSON] accepts, or nil for none. An error it returns is
// passed to the caller as it is; see [Registry.Run].
type Action struct {
	Definition
	Run Body

	// err is what [Typed] found wrong, reported by Register.
	err error
	// agree, set by [Typed] for a given parameters schema, compares the
	// compiled schema document with the Go type of the parameters.
	agree func(doc map[string]any) error
	// encode, set by [Typed], writes a result in JSON's Go types for its
	// output check, without encoding/json's text in between.
	encode func(result any) (any, error)
	// release hands back what encode made, once the value is written.
	release func(v any)
}

// New returns the action of def whose body is body, for [Registry.Register]:
//
//	reg.Register(actions.New(def, func(ctx context.Context, p map[string]any, t *actions.Trace) (any, error) {
//		...
//	}))
func New(def Definition, body Body) Action {
	return Action{Definition: def, Run: body}
}

// UnmarshalJSON decodes a manifest entry, and folds the old
// spelling of the policy ("kind": read or action, "destructive",
// "exposure": visible or hidden) into Effect, Additive and Surfaces. It
// refuses unknown fields, a kind or exposure outside those values, a fact
// given in both spellings, and member names that differ from the fields'
// only in case. parameters may be a schema object or a string holding
// the schema's JSON text; both are kept as json.RawMessage. The id and
// the schema are checked later, by [Registry.Register] or
// [Registry.Bind]. Its errors read "actions: definition ...".
func (d *Definition) UnmarshalJSON(data []byte) error {
	if err := d.unmarshal(data); err != nil {
		return &definitionFault{err}
	}
	return nil
}

// definitionFault is an error of [Definition.UnmarshalJSON], which a
// manifest's decoder gives as it is.
type definitionFault struct{ err error }

func (f *definitionFault) Error() string { return "actions: " + f.err.Error() }
func (f *definitionFault) Unwrap() error { return f.err }

func (d *Definition) unmarshal(data []byte) error {
	type plain Definition
	var raw struct {
		plain
		legacy
		Parameters   json.RawMessage `json:"parameters,omitempty"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	}
	// encoding/json matches member names without regard to case, so that
	// "Exposure" would silently win over "exposure": names must be exact.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return fmt.Errorf("definition: %w", typeFault(err, "a definition must be an object"))
	}
	for name := range members {
		if !definitionMember(name) {
			return fmt.Errorf("definition: unknown member %q (member names are exact: see the JSON tags of actions.Definition)", name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("definition: %w", typeFault(err, "a definition must be an object"))
	}
	if dec.More() {
		return fmt.Errorf("definition: data after the object")
	}
	*d = Definition(raw.plain)
	var err error
	if d.Parameters, err = schemaMember(d.ID, "parameters", raw.Parameters); err != nil {
		return err
	}
	if d.OutputSchema, err = schemaMember(d.ID, "outputSchema", raw.OutputSchema); err != nil {
		return err
	}
	switch raw.Kind {
	case "", "read", "action":
	default:
		return fmt.Errorf("definition %q: kind must be \"read\" or \"action\"", d.ID)
	}
	switch raw.Exposure {
	case "", "visible", "hidden":
	default:
		return fmt.Errorf("definition %q: exposure must be \"visible\" or \"hidden\"", d.ID)
	}
	if err := d.fold(raw.legacy); err != nil {
		return fmt.Errorf("definition %q: %w", d.ID, err)
	}
	return nil
}

// typeFault describes a member of the wrong JSON type by its name and
// the type it must have: encoding/json's own message quotes a number's
// digits (a submitted value) and names the decoder's Go types. top is
// the sentence for the whole value; other errors are returned as they
// are.
func typeFault(err error, top string) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	name := strings.TrimPrefix(strings.TrimPrefix(te.Field, "plain."), "legacy.")
	if name == "" || te.Type == nil {
		return errors.New(top)
	}
	t := te.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := "of another JSON type"
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Map, reflect.Struct:
		want = "an object"
	}
	return fmt.Errorf("%s must be %s", name, want)
}

// schemaMember reads a member holding a schema object or a string of its
// JSON text, as json.RawMessage; nil when absent or null.
func schemaMember(id, name string, raw json.RawMessage) (any, error) {
	switch p := bytes.TrimSpace(raw); {
	case len(p) == 0 || string(p) == "null":
		return nil, nil
	case p[0] == '"':
		var text string
		if err := json.Unmarshal(p, &text); err != nil {
			return nil, fmt.Errorf("definition %q: %s: %w", id, name, err)
		}
		return json.RawMessage(text), nil
	case p[0] == '{':
		return json.RawMessage(p), nil
	}
	return nil, fmt.Errorf("definition %q: %s must be a schema object or its JSON text", id, name)
}

// definitionMember reports whether name is the exact JSON name of a
// Definition field.
func definitionMember(name string) bool {
	switch name {
	case "kind", "destructive", "exposure": // the old spelling (see legacy)
		return true
	}
	t := reflect.TypeFor[Definition]()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return true
		}
	}
	return false
}

// DecodeManifest decodes a JSON array of definitions (a manifest). It
// refuses text that is not I-JSON (duplicate member names, invalid UTF-8,
// lone surrogates) and what [Definition.UnmarshalJSON] refuses; it does
// not check ids or compile schemas (see [Registry.Bind]).
func DecodeManifest(data []byte) ([]Definition, error) {
	// encoding/json keeps the last of two equal names; a manifest is read
	// as I-JSON (RFC 7493) first so that none is silently dropped.
	if _, err := ijson.Decode(data, 0); err != nil {
		// Described as the parameters' and batches' faults are, without
		// the internal decoder's name.
		var je *ijson.Error
		if errors.As(err, &je) {
			return nil, fmt.Errorf("actions: the manifest is not I-JSON text: %s%s", pointerPrefix(je.Pointer), textFault(je, data, ijson.DefaultMaxDepth))
		}
		return nil, fmt.Errorf("actions: manifest: %w", err)
	}
	var defs []Definition
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&defs); err != nil {
		if errors.As(err, new(*definitionFault)) {
			return nil, err
		}
		return nil, fmt.Errorf("actions: manifest: %w", typeFault(err, "a manifest is an array of definitions"))
	}
	if dec.More() {
		return nil, fmt.Errorf("actions: manifest: data after the array")
	}
	return defs, nil
}

// checkID returns a constraint_violation refusal when id is not
// "namespace/name" with both parts identifiers.
func checkID(id string) error {
	ns, name, ok := cutSlash(id)
	switch {
	case id == "":
		return idRefusal("the id is empty")
	case !ok:
		return idRefusal("the id must be namespace/name with one slash")
	case !isIdentifier(ns):
		return idRefusal("the namespace must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
	case !isIdentifier(name):
		return idRefusal("the name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
	case len(id) > maxToolNameLength:
		return idRefusal(fmt.Sprintf("the id is longer than %d bytes, the longest MCP tool name", maxToolNameLength))
	}
	return nil
}

func idRefusal(msg string) error {
	return refusef(codes.ConstraintViolation, "invalid action id", Issue{Path: "/id", Keyword: "id", Message: msg})
}

func cutSlash(id string) (ns, name string, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			ns, name = id[:i], id[i+1:]
			for j := 0; j < len(name); j++ {
				if name[j] == '/' {
					return "", "", false
				}
			}
			return ns, name, true
		}
	}
	return "", "", false
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// pointerPrefix returns "at POINTER: " for a fault inside a document, and
// "" for one at its root.
func pointerPrefix(ptr string) string {
	if ptr == "" {
		return ""
	}
	return "at " + ptr + ": "
}

// Body is an action's code. It receives the checked parameters (a copy in
// JSON's Go types: map[string]any, []any, string, bool, nil, json.Number)
// and the environment the registry builds for it; see [Action].
type Body func(ctx context.Context, params map[string]any, t *Trace) (any, error)

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

// offers reports whether the definition may be offered on surface s: s is
// in Surfaces (every surface when Surfaces is nil), and s is not mcp or ai
// for an action touching protected personal data.
func (d *Definition) offers(s identity.Surface) bool {
	if (s == identity.SurfaceMCP || s == identity.SurfaceAI) && slices.Contains(d.PersonalData, PersonalProtected) {
		return false
	}
	if s == identity.SurfaceAI && d.AppOnly {
		return false
	}
	surfaces := d.Surfaces
	if surfaces == nil {
		surfaces = allSurfaces
	}
	return slices.Contains(surfaces, s)
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
				d.Surfaces = []identity.Surface{}
			}
		}
	}
	if d.Effect == "" {
		d.Effect = EffectWrite
	}
	issues = append(issues, d.checkPolicy()...)
	if len(issues) > 0 {
		return refusef(codes.ConstraintViolation, "the action's policy is refused", sortIssues(issues)...)
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
	if d.NeedsConfirmation && !d.offers(identity.SurfaceUI) {
		// The person confirms on the host's own screen: an action that
		// screen is not offered could never be confirmed there.
		add("/needsConfirmation", "needsConfirmation", "an action that needs confirmation must be offered on the ui surface")
	}
	issues = append(issues, d.checkApproval()...)
	if d.AppOnly && (slices.Contains(d.Surfaces, identity.SurfaceAI) || !d.offers(identity.SurfaceMCP)) {
		add("/appOnly", "appOnly", "an app-only tool is offered on mcp, where its view calls it, and never on ai")
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
		case (s == identity.SurfaceMCP || s == identity.SurfaceAI) && slices.Contains(d.PersonalData, PersonalProtected):
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
		case codes.RetryNever, codes.RetryAfterEdit, codes.RetryAfterBackoff:
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

// declaredRetry returns the retry the definition declares for a domain
// refusal code, and whether it declares one.
func (d *Definition) declaredRetry(c codes.Code) (codes.Retry, bool) {
	for _, dr := range d.Refusals {
		if dr.Code == c {
			return dr.Retry, true
		}
	}
	return "", false
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
		d.Surfaces = append([]identity.Surface{}, d.Surfaces...)
	}
	d.PersonalData = slices.Clone(d.PersonalData)
	d.Refusals = slices.Clone(d.Refusals)
	d.DeprecatedAliases = slices.Clone(d.DeprecatedAliases)
	d.Approval = d.Approval.clone()
}

// maxToolNameLength is the longest tool name MCP accepts (128). Most AI
// providers accept at most 64 characters: keep ids shorter than that when
// the tools are meant for them.
const maxToolNameLength = portable.MCPToolNameLength
