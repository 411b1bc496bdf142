package profiles

import (
	"sort"

	"github.com/actionreg/actions/internal/ijson"
)

// nullToAbsent removes from a strict call's arguments each null that
// stands for a property left out: a member named in nullable (by the
// pointer of its object schema in root) whose value is null. It walks v
// along root, through properties, items, prefixItems,
// additionalProperties, local $refs and the branches of anyOf, oneOf and
// allOf; v is the caller's own decoded copy and is changed in place.
func nullToAbsent(root map[string]any, nullable map[string]bool, v any) {
	if len(nullable) == 0 {
		return
	}
	w := nullWalker{root: root, nullable: nullable}
	w.walk([]place{{root, "", ""}}, v)
}

type nullWalker struct {
	root     map[string]any
	nullable map[string]bool
}

// place is a schema object, its pointer in root, and its pointer in the
// export: the export merges an allOf into the schema holding it, so that
// what a branch declares is named from the holder ("/properties/a" for
// root's "/allOf/0/properties/a"). Both pointers name schemas that apply
// to the same value.
type place struct {
	s      map[string]any
	ptr    string
	merged string
}

// expand adds s and every schema that applies with it to the same value
// (the targets of its local $refs, the branches of its anyOf, oneOf and
// allOf, transitively) to out, once each.
func (w *nullWalker) expand(s any, ptr, merged string, out []place, hops int) []place {
	m, ok := s.(map[string]any)
	if !ok || hops > 32 {
		return out
	}
	for _, p := range out {
		if p.ptr == ptr {
			return out
		}
	}
	out = append(out, place{m, ptr, merged})
	if ref, ok := m["$ref"].(string); ok {
		if t, tptr, ok := resolveLocal(w.root, ref); ok {
			out = w.expand(t, tptr, tptr, out, hops+1)
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok {
			for i, b := range bs {
				bm := ijson.AppendIndex(ijson.AppendToken(merged, kw), i)
				if kw == "allOf" {
					bm = merged // the export merges the branch into its holder
				}
				out = w.expand(b, ijson.AppendIndex(ijson.AppendToken(ptr, kw), i), bm, out, hops+1)
			}
		}
	}
	return out
}

// walk maps the nulls of v, which the schemas starts describe. Each value
// is visited once, with every schema that applies to it.
func (w *nullWalker) walk(starts []place, v any) {
	var places []place
	for _, p := range starts {
		places = w.expand(p.s, p.ptr, p.merged, places, 0)
	}
	switch x := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
	members:
		for _, k := range names {
			if x[k] == nil {
				for _, p := range places {
					if w.nullable[p.ptr+"\x00"+k] || w.nullable[p.merged+"\x00"+k] {
						delete(x, k)
						continue members
					}
				}
				continue
			}
			var subs []place
			for _, p := range places {
				props, _ := p.s["properties"].(map[string]any)
				if sub, ok := props[k].(map[string]any); ok {
					subs = append(subs, place{sub, ijson.AppendToken(ijson.AppendToken(p.ptr, "properties"), k), ijson.AppendToken(ijson.AppendToken(p.merged, "properties"), k)})
				} else if ap, ok := p.s["additionalProperties"].(map[string]any); ok {
					subs = append(subs, place{ap, ijson.AppendToken(p.ptr, "additionalProperties"), ijson.AppendToken(p.merged, "additionalProperties")})
				}
			}
			if len(subs) > 0 {
				w.walk(subs, x[k])
			}
		}
	case []any:
		for i, e := range x {
			var subs []place
			for _, p := range places {
				prefix, _ := p.s["prefixItems"].([]any)
				if i < len(prefix) {
					if sub, ok := prefix[i].(map[string]any); ok {
						subs = append(subs, place{sub, ijson.AppendIndex(ijson.AppendToken(p.ptr, "prefixItems"), i), ijson.AppendIndex(ijson.AppendToken(p.merged, "prefixItems"), i)})
					}
				} else if it, ok := p.s["items"].(map[string]any); ok {
					subs = append(subs, place{it, ijson.AppendToken(p.ptr, "items"), ijson.AppendToken(p.merged, "items")})
				}
			}
			if len(subs) > 0 {
				w.walk(subs, e)
			}
		}
	}
}
