// Package declare writes the actions a caller may see as TypeScript
// declarations, for models and agents that call tools from a program
// rather than one at a time ("code mode"). Each action namespace becomes
// one global object holding a function per action, typed from the
// action's input and output schemas:
//
//	declare const supply: {
//	  /** Lists the actors ... */
//	  list_actors(params?: supply.ListActorsParams): Promise<supply.ListActorsResult>;
//	};
//
// Use it with [actions.Registry.Tools]: the tools a caller may see, as
// the gate would let it call them, go in, their declarations come out.
// See docs/tools.md.
package declare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/actionreg/actions"
)

// Preamble is the text every declaration file starts with: the branded
// type of a ref parameter. A ref value is the id or exact display name
// of a record of one kind; a program gets one from another action's
// result, or writes one with a cast (`"ann" as Ref<"actor">`).
const Preamble = `/** The id or exact display name of a record of the named kind, as a ref parameter takes it. */
type Ref<Kind extends string> = string & { readonly __ref: Kind };
`

// TypeScript returns the declarations of tools, which
// [actions.Registry.Tools] gave (any order): [Preamble], then for each
// action namespace, in name order, a `declare namespace` holding the
// types of its actions (<Name>Params and <Name>Result, <Name> the action
// name in Pascal case, or T_<name> for the later of two actions that
// give the same; and one type per $defs entry, <Name>_<def>) and a `declare const` of the same name
// holding one function per action, in name order:
//
//	name(params: NsName.NameParams): Promise<NsName.NameResult>
//
// where params is optional when the schema requires nothing, and the
// result is unknown for an action without an output schema. The text is
// a TypeScript script (no import or export): its names are global, as a
// program's runtime gives them. It type-checks with tsc --strict.
//
// Schemas map to types as docs/tools.md tabulates: objects to object
// types (a property outside required is optional, one that is not an
// identifier is quoted), enum and const to unions of literals, anyOf and
// oneOf to unions, allOf to intersections, type lists to unions, arrays
// to T[] (prefixItems to tuples), local $refs to the named types of
// their targets, "ref": kind to Ref<"kind">, and what has no TypeScript
// counterpart (a pattern, a bound, not) to the type it narrows. Titles,
// descriptions, defaults and formats become JSDoc comments. The
// registry still checks every call against the full schema.
//
// A namespace that is a reserved word of TypeScript, or a global of the
// ECMAScript library a program needs (Promise, JSON, ...), gets a
// trailing underscore ("new" is written new_), so that the declarations
// stay valid and shadow nothing; the tool name is unchanged. An action
// name needs no change: it is a member name, where any word is allowed.
//
// Errors: a tool whose name no action id gives (a search or batch tool
// of mcpserver, say) is the *actions.Refusal unknown_action of
// [actions.ActionID], wrapped as "declare: ..."; nothing is written.
func TypeScript(tools []actions.Tool) (string, error) {
	byNS := map[string][]*fn{}
	for i := range tools {
		id, err := actions.ActionID(tools[i].Name)
		if err != nil {
			return "", fmt.Errorf("declare: the tool %q is not an action's: %w", tools[i].Name, err)
		}
		ns, name, _ := strings.Cut(id, "/")
		byNS[ns] = append(byNS[ns], &fn{name: name, tool: &tools[i]})
	}
	var b strings.Builder
	b.WriteString(Preamble)
	names := make([]string, 0, len(byNS))
	for ns := range byNS {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		fns := byNS[ns]
		sort.Slice(fns, func(i, j int) bool { return fns[i].name < fns[j].name })
		writeNamespace(&b, ident(ns), fns)
	}
	return b.String(), nil
}

// fn is one action of a namespace.
type fn struct {
	name string
	tool *actions.Tool
	// typeName is the prefix of the action's type names, unique in
	// its namespace.
	typeName string
}

func writeNamespace(b *strings.Builder, ns string, fns []*fn) {
	taken := map[string]bool{}
	for _, f := range fns {
		f.typeName = pascal(f.name)
		if taken[f.typeName] {
			f.typeName = "T_" + f.name
		}
		taken[f.typeName] = true
	}
	fmt.Fprintf(b, "\ndeclare namespace %s {\n", ns)
	for _, f := range fns {
		w := &writer{ns: ns, prefix: f.typeName, root: f.tool.InputSchema}
		writeDefs(b, w, f.tool.InputSchema, f.typeName+"_")
		writeType(b, w, f.typeName+"Params", f.tool.InputSchema, "The parameters of "+ns+"."+f.name+".")
		if f.tool.OutputSchema != nil {
			wo := &writer{ns: ns, prefix: f.typeName + "Result", root: f.tool.OutputSchema, output: true}
			writeDefs(b, wo, f.tool.OutputSchema, f.typeName+"Result_")
			writeType(b, wo, f.typeName+"Result", f.tool.OutputSchema, "What "+ns+"."+f.name+" gives.")
		}
	}
	b.WriteString("}\n")
	fmt.Fprintf(b, "\ndeclare const %s: {\n", ns)
	for _, f := range fns {
		writeDoc(b, "  ", functionDoc(f.tool))
		opt := "?"
		if req, _ := f.tool.InputSchema["required"].([]any); len(req) > 0 {
			opt = ""
		}
		result := "unknown"
		if f.tool.OutputSchema != nil {
			result = ns + "." + f.typeName + "Result"
		}
		fmt.Fprintf(b, "  %s(params%s: %s.%sParams): Promise<%s>;\n", f.name, opt, ns, f.typeName, result)
	}
	b.WriteString("};\n")
}

// writeDefs writes one type per $defs entry of root, named prefix+key.
func writeDefs(b *strings.Builder, w *writer, root map[string]any, prefix string) {
	defs, _ := root["$defs"].(map[string]any)
	for _, k := range sortedKeys(defs) {
		writeType(b, w, prefix+identPart(k), defs[k], "")
	}
}

// writeType writes `type name = T;` in the namespace, with its
// comment.
func writeType(b *strings.Builder, w *writer, name string, s any, fallback string) {
	doc := docOf(s)
	if doc == "" {
		doc = fallback
	}
	writeDoc(b, "  ", doc)
	fmt.Fprintf(b, "  type %s = %s;\n", name, w.typeOf(s, 1, 0))
}

// functionDoc is an action's comment: its title, its description, and
// what its annotations say.
func functionDoc(t *actions.Tool) string {
	var parts []string
	if t.Title != "" {
		parts = append(parts, t.Title+".")
	}
	if t.Description != "" {
		parts = append(parts, t.Description)
	}
	switch {
	case t.Annotations.ReadOnlyHint:
		parts = append(parts, "Reads only.")
	case t.Annotations.DestructiveHint:
		parts = append(parts, "Destructive: it may delete or overwrite.")
	}
	parts = append(parts, "Tool: "+t.Name+".")
	return strings.Join(parts, "\n\n")
}

// writeDoc writes text as a JSDoc comment at indent; nothing for "".
func writeDoc(b *strings.Builder, indent, text string) {
	if text == "" {
		return
	}
	text = strings.ReplaceAll(text, "*/", "*\\/")
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, lines[0])
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		if l == "" {
			fmt.Fprintf(b, "%s *\n", indent)
			continue
		}
		fmt.Fprintf(b, "%s * %s\n", indent, l)
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
