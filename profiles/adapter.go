// The adapter: a registry seen through one profile, both ways.

package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/ijson"
)

// Adapter exports the actions of one [*actions.Registry] for one profile
// and runs the tool calls a model makes with those tools. A host makes
// one per registry and profile at start-up and keeps it: it learns each
// action's strict export once, which the way back needs (OpenAI's
// nulls). It is safe for concurrent use.
//
// The adapter assumes an action's parameters schema does not change once
// the action is registered, as [actions.Registry] guarantees; a registry
// that replaces actions needs a new Adapter.
type Adapter struct {
	registry *actions.Registry
	rules    *profileRules
	// back holds, by action id and deprecated alias, what RunToolCall
	// maps a strict tool's nulls back with; learning serialises the
	// exports that fill it.
	back     sync.Map // string → *exported (wire left out)
	learning sync.Mutex
}

// New returns the adapter of r for profile p. Checking p here, once,
// leaves Export and RunToolCall only the registry's errors and the
// schema's.
//
// Errors: an unknown profile (one [All] does not list) is a
// *actions.Refusal constraint_violation, its issue keyword "profile",
// wrapped as "profiles: ...".
func New(r *actions.Registry, p Profile) (*Adapter, error) {
	rules, err := rulesOf(p)
	if err != nil {
		return nil, err
	}
	return &Adapter{registry: r, rules: rules}, nil
}

// Export exports the registry's actions for the adapter's profile, sorted
// by tool name, from its [*actions.Registry.Tools] and
// [*actions.Registry.Definitions]: nothing is compiled again. opts may be
// nil. With opts.Caller, the actions that caller may see (as Tools);
// without, those offered on the mcp surface for [MCP] and on the ai
// surface for the provider profiles. Its Languages describe localized
// text parameters as Tools does. Under MCP each tool is what Tools gives
// (output schema included), as JSON values. The tools are the caller's
// own copies. See docs/profiles.md for each profile's rules.
//
// Errors (*actions.Refusal constraint_violation, wrapped with the
// action's id): a tool name the provider refuses (longer than 64
// characters, for every profile but MCP; see [CheckPortableName] and
// [actions.Options].PortableNames to refuse such ids at Register); a
// schema the profile cannot express at all (a recursive schema, or a
// $ref that is not a JSON Pointer, under GeminiOpenAPI, which inlines
// them). The registry's own errors from Tools come back as they are; a registry
// other than [actions.Registry] may also give a parameters schema that
// is not JSON, or a tool name no action id gives ("profiles: ..."
// errors naming it). A keyword a profile drops is no error: it is a
// [Loss]. Nor is a property key Anthropic refuses (outside
// ^[a-zA-Z0-9_.-]{1,64}$, which would fail the whole request): under
// Anthropic and AnthropicStrict it is renamed (each other byte made
// "_", cut to 64 bytes, a suffix _2, _3, ... against a name taken), with
// a Loss of keyword "properties" naming both, and RunToolCall names it
// back.
func (a *Adapter) Export(opts *actions.ToolOptions) (*Export, error) {
	defs := a.registry.Definitions()
	var view actions.ToolOptions
	if opts != nil {
		view = *opts
	}
	if view.Caller == nil && a.rules.profile != MCP {
		view.Caller = everyone(identity.SurfaceAI, defs)
	}
	tools, err := a.registry.Tools(&view)
	if err != nil {
		return nil, err
	}
	docs, err := docsOf(defs)
	if err != nil {
		return nil, err
	}
	return exportAll(a.rules, tools, docs)
}

// RunToolCall runs a tool call a provider's model made with a tool of
// the adapter's profile. c is the call as every entry point makes it,
// c.Action holding the tool name as the model sent it and c.Params its
// arguments as JSON text ([]byte, json.RawMessage or string: OpenAI's
// function.arguments, Anthropic's tool_use input, Gemini's
// functionCall.args re-encoded). It gives what [*actions.Registry.Run]
// gives for the action the name comes from ([actions.ActionID]), and
// Run is what it calls: the same gate (a host serving a model API sets
// c.Caller.Surface to ai), checks, defaults, body, record and OnRecord.
//
// Under OpenAIChat and OpenAIResponses, a strict tool lists every
// property as required, and the model sends null for each property it
// would have left out. Before the check, each null member whose property
// was made nullable by the export (one the action's schema declares
// optional and does not let be null) is removed, so that defaults fill
// as they do for a call that leaves the property out. A null the schema
// accepts is kept. Where branches of anyOf, oneOf or allOf declare the
// same property, a null is removed when any branch had it made nullable.
// Under Anthropic and AnthropicStrict, each member named with a key
// the export renamed is named back (along the schema, at any depth), so
// that the action gets the names its schema declares; a member whose
// old name the arguments also hold is left as it is. Other profiles
// pass the arguments as they are. The first call of an
// action the adapter does not know yet exports every action the registry
// offers, once; an action that no export shows passes as it is.
//
// Empty arguments (or only white space) mean {}. Text that is not JSON,
// or larger than Limits.MaxParamBytes, goes to Run as it is, which
// refuses it with invalid_parameters; Params that are not text go to Run
// as they are too.
//
// Errors: as Run's, Run's own. A name that no action id gives is
// refused by Run with unknown_action, its record naming the tool; a name
// that is an id or alias itself (the model sent "shop/order" for the
// tool "shop-order") names no tool either, and is recorded with its
// slash written %2F, so that Run refuses it rather than run the action.
func (a *Adapter) RunToolCall(ctx context.Context, c actions.Call) (actions.Result, error) {
	name := c.Action
	id, err := actions.ActionID(name)
	if err != nil {
		if strings.Contains(name, "/") && !errors.Is(a.registry.Admit(ctx, name, nil), codes.UnknownAction) {
			c.Action = strings.ReplaceAll(name, "/", "%2F")
		}
		return a.registry.Run(ctx, c)
	}
	c.Action = id
	arguments, isText := ijson.Text(c.Params)
	if !isText {
		return a.registry.Run(ctx, c)
	}
	limits := a.registry.Limits()
	switch {
	case len(bytes.TrimSpace(arguments)) == 0:
		c.Params = nil
	case a.rules.strict == strictOpenAI && len(arguments) <= limits.MaxParamBytes:
		if v, ok := a.strictArguments(ctx, id, arguments, limits.MaxParamDepth); ok {
			c.Params = v
		}
	case a.rules.renamesKeys && len(arguments) <= limits.MaxParamBytes:
		if v, ok := a.renamedArguments(ctx, id, arguments, limits.MaxParamDepth); ok {
			c.Params = v
		}
	}
	return a.registry.Run(ctx, c)
}

// strictArguments decodes arguments and maps the nulls of a strict tool
// back to absent members; ok is false when nothing is to be mapped or the
// text does not decode (Run then sees it as it came).
func (a *Adapter) strictArguments(ctx context.Context, id string, arguments []byte, depth int) (map[string]any, bool) {
	t := a.strictOf(ctx, id)
	if t == nil || !t.strict || len(t.nullable) == 0 {
		return nil, false
	}
	v, err := ijson.Decode(arguments, depth)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	nullToAbsent(t.source, t.nullable, m)
	return m, true
}

// renamedArguments decodes arguments and names back the members whose
// keys the export renamed; ok is false when nothing is to be renamed or
// the text does not decode.
func (a *Adapter) renamedArguments(ctx context.Context, id string, arguments []byte, depth int) (map[string]any, bool) {
	t := a.strictOf(ctx, id)
	if t == nil || len(t.renamed) == 0 {
		return nil, false
	}
	v, err := ijson.Decode(arguments, depth)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	keysBack(t.source, t.renamed, m)
	return m, true
}

// strictOf returns the strict export of action id (or alias), learning
// every action's when id is not known yet; nil for an id the registry does
// not have, which Run refuses.
func (a *Adapter) strictOf(ctx context.Context, id string) *exported {
	if v, ok := a.back.Load(id); ok {
		return v.(*exported)
	}
	if errors.Is(a.registry.Admit(ctx, id, nil), codes.UnknownAction) {
		return nil // not cached: an unknown id costs no export
	}
	a.learning.Lock()
	defer a.learning.Unlock()
	if _, ok := a.back.Load(id); !ok {
		a.learn()
	}
	v, _ := a.back.LoadOrStore(id, &exported{}) // no export shows it: as it is
	return v.(*exported)
}

// learn keeps the strict export of every action some surface offers,
// under its id and its deprecated aliases. Tools are exported one by
// one, without the per-request caps, as each call maps back alone.
//
// The definitions are read again after the tools: an action registered
// while the adapter learns (after the first read) is then in both, its
// aliases included, since a registry never drops an action.
func (a *Adapter) learn() {
	defs := a.registry.Definitions()
	var offered [][]actions.Tool
	for _, s := range []identity.Surface{identity.SurfaceAI, identity.SurfaceMCP, identity.SurfaceUI} {
		if tools, err := a.registry.Tools(&actions.ToolOptions{Caller: everyone(s, defs)}); err == nil {
			offered = append(offered, tools)
		}
	}
	defs = a.registry.Definitions()
	docs, err := docsOf(defs)
	if err != nil {
		return
	}
	aliases := map[string][]string{}
	for _, d := range defs {
		aliases[d.ID] = d.DeprecatedAliases
	}
	for _, tools := range offered {
		for i := range tools {
			id, err := actions.ActionID(tools[i].Name)
			if err != nil {
				continue
			}
			if _, ok := a.back.Load(id); ok {
				continue
			}
			t, err := exportOne(a.rules, id, &tools[i], docs[id], nil)
			if err != nil {
				t = &exported{}
			}
			t.wire = nil // only the strictness and the nulls are kept
			a.back.Store(id, t)
			for _, alias := range aliases[id] {
				a.back.LoadOrStore(alias, t)
			}
		}
	}
}

// everyone returns a caller on surface s holding every capability defs
// name: the tools it may see are those offered on s.
func everyone(s identity.Surface, defs []actions.Definition) *identity.Caller {
	c := &identity.Caller{Surface: s}
	seen := map[string]bool{}
	for _, d := range defs {
		if d.Capability != "" && !seen[d.Capability] {
			seen[d.Capability] = true
			c.Capabilities = append(c.Capabilities, d.Capability)
		}
	}
	return c
}

// docsOf returns each definition's parameters schema in JSON's Go types,
// by id: as [actions.Registry.Definitions] gives it, or decoded from the
// JSON text (or value) another registry gives. An action without
// parameters has none (nil).
func docsOf(defs []actions.Definition) (map[string]map[string]any, error) {
	out := make(map[string]map[string]any, len(defs))
	for _, d := range defs {
		var text []byte
		switch p := d.Parameters.(type) {
		case nil:
			continue
		case map[string]any:
			out[d.ID] = p
			continue
		case json.RawMessage:
			text = p
		case []byte:
			text = p
		case string:
			text = []byte(p)
		default:
			var err error
			if text, err = json.Marshal(p); err != nil {
				return nil, fmt.Errorf("profiles: the parameters schema of %s: %w", d.ID, err)
			}
		}
		v, err := ijson.Decode(text, 0)
		if err != nil {
			return nil, fmt.Errorf("profiles: the parameters schema of %s: %w", d.ID, err)
		}
		m, _ := v.(map[string]any)
		out[d.ID] = m
	}
	return out, nil
}
