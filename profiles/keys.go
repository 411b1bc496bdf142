// Property keys a provider refuses: renamed on the way out, and named
// back on the way in.

package profiles

import (
	"fmt"
	"sort"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
)

// maxKeyLength is the longest property key Anthropic takes.
const maxKeyLength = 64

// portableKeyByte reports whether c may stand in a key Anthropic takes:
// ^[a-zA-Z0-9_.-]{1,64}$.
func portableKeyByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func portableKey(k string) bool {
	if k == "" || len(k) > maxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !portableKeyByte(k[i]) {
			return false
		}
	}
	return true
}

// keyRename is one property key renamed: the pointer of the object
// schema holding it, in the source and in the renamed schema, and both
// names.
type keyRename struct {
	from, to       string // the pointers of the holding schema
	oldKey, newKey string
}

// renameKeys returns a copy of s in which every property key Anthropic
// refuses is renamed: each byte outside [a-zA-Z0-9_.-] made "_", cut to
// 64 bytes, and, when that name is taken in the same properties, cut
// shorter and given a suffix _2, _3, ... The names in required,
// dependentRequired and dependentSchemas follow, and so do $refs into a
// renamed property. back maps "pointer\x00new" (the holding schema's
// pointer in the copy) to the key's name in s. s is not changed.
func renameKeys(s map[string]any) (out map[string]any, back map[string]string, renames []keyRename) {
	if !hasBadKey(s, 0) {
		return s, nil, nil
	}
	out = schema.Copy(s).(map[string]any)
	back = map[string]string{}
	var walk func(v any, from, to string, depth int)
	walk = func(v any, from, to string, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 64 {
			return
		}
		names := map[string]string{} // old → new, in this schema
		if props, ok := m["properties"].(map[string]any); ok {
			for _, k := range sortedKeys(props) {
				if portableKey(k) {
					continue
				}
				n := freeKey(k, props)
				props[n] = props[k]
				delete(props, k)
				names[k] = n
				back[to+"\x00"+n] = k
				renames = append(renames, keyRename{from, to, k, n})
			}
		}
		if len(names) > 0 {
			renameNames(m, names)
		}
		for _, kw := range sortedKeys(m) {
			sub := m[kw]
			switch kw {
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				subs, _ := sub.(map[string]any)
				for _, n := range sortedKeys(subs) {
					old := n
					if kw == "properties" || kw == "dependentSchemas" {
						for o, nn := range names {
							if nn == n {
								old = o
							}
						}
					}
					walk(subs[n], ijson.AppendToken(ijson.AppendToken(from, kw), old), ijson.AppendToken(ijson.AppendToken(to, kw), n), depth+1)
				}
			case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
				"unevaluatedProperties", "unevaluatedItems":
				walk(sub, ijson.AppendToken(from, kw), ijson.AppendToken(to, kw), depth+1)
			case "prefixItems", "anyOf", "oneOf", "allOf":
				list, _ := sub.([]any)
				for i, e := range list {
					walk(e, ijson.AppendIndex(ijson.AppendToken(from, kw), i), ijson.AppendIndex(ijson.AppendToken(to, kw), i), depth+1)
				}
			}
		}
	}
	walk(out, "", "", 0)
	rewriteRefs(out, renames)
	return out, back, renames
}

// hasBadKey reports whether some properties map under v holds a key
// Anthropic refuses.
func hasBadKey(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for k := range props {
				if !portableKey(k) {
					return true
				}
			}
		}
		for _, e := range x {
			if hasBadKey(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasBadKey(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// freeKey is k made portable, and not a key of taken.
func freeKey(k string, taken map[string]any) string {
	b := []byte(k)
	for i, c := range b {
		if !portableKeyByte(c) {
			b[i] = '_'
		}
	}
	base := string(b)
	if base == "" {
		base = "_"
	}
	if len(base) > maxKeyLength {
		base = base[:maxKeyLength]
	}
	if _, ok := taken[base]; !ok {
		return base
	}
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("_%d", i)
		n := base
		if len(n)+len(suffix) > maxKeyLength {
			n = n[:maxKeyLength-len(suffix)]
		}
		n += suffix
		if _, ok := taken[n]; !ok {
			return n
		}
	}
}

// renameNames renames, in schema m, the property names required,
// dependentRequired and dependentSchemas list.
func renameNames(m map[string]any, names map[string]string) {
	rename := func(v any) any {
		if s, ok := v.(string); ok {
			if n, ok := names[s]; ok {
				return n
			}
		}
		return v
	}
	if req, ok := m["required"].([]any); ok {
		for i := range req {
			req[i] = rename(req[i])
		}
	}
	if dr, ok := m["dependentRequired"].(map[string]any); ok {
		for _, k := range sortedKeys(dr) {
			list, _ := dr[k].([]any)
			for i := range list {
				list[i] = rename(list[i])
			}
			if n, ok := names[k]; ok {
				dr[n] = dr[k]
				delete(dr, k)
			}
		}
	}
	if ds, ok := m["dependentSchemas"].(map[string]any); ok {
		for _, k := range sortedKeys(ds) {
			if n, ok := names[k]; ok {
				ds[n] = ds[k]
				delete(ds, k)
			}
		}
	}
}

// rewriteRefs makes each local $ref that leads through a renamed
// property lead through its new name.
func rewriteRefs(root map[string]any, renames []keyRename) {
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
				x["$ref"] = "#" + movedPointer(ref[1:], renames)
			}
			for _, e := range x {
				walk(e, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	walk(root, 0)
}

// movedPointer is the pointer ptr of the source schema in the renamed
// one.
func movedPointer(ptr string, renames []keyRename) string {
	// Longest source prefix first: renames of deeper properties hold
	// the new names of the shallower ones already.
	best := -1
	for i, r := range renames {
		p := ijson.AppendToken(ijson.AppendToken(r.from, "properties"), r.oldKey)
		if (ptr == p || strings.HasPrefix(ptr, p+"/")) && (best < 0 || len(p) > len(ijson.AppendToken(ijson.AppendToken(renames[best].from, "properties"), renames[best].oldKey))) {
			best = i
		}
	}
	if best < 0 {
		return ptr
	}
	r := renames[best]
	p := ijson.AppendToken(ijson.AppendToken(r.from, "properties"), r.oldKey)
	return ijson.AppendToken(ijson.AppendToken(r.to, "properties"), r.newKey) + ptr[len(p):]
}

// sourcePointer is the pointer ptr of the renamed schema in the source
// one, for the losses.
func sourcePointer(ptr string, renames []keyRename) string {
	best := -1
	bestLen := -1
	for i, r := range renames {
		p := ijson.AppendToken(ijson.AppendToken(r.to, "properties"), r.newKey)
		if (ptr == p || strings.HasPrefix(ptr, p+"/")) && len(p) > bestLen {
			best, bestLen = i, len(p)
		}
	}
	if best < 0 {
		return ptr
	}
	r := renames[best]
	return ijson.AppendToken(ijson.AppendToken(r.from, "properties"), r.oldKey) + ptr[bestLen:]
}

// renameLosses are the losses that say which keys were renamed.
func renameLosses(id string, renames []keyRename) []Loss {
	out := make([]Loss, 0, len(renames))
	for _, r := range renames {
		out = append(out, Loss{id, r.from, "properties", fmt.Sprintf("the key %q renamed %q: Anthropic refuses a key outside ^[a-zA-Z0-9_.-]{1,64}$; a call's member of that name is named back", r.oldKey, r.newKey)})
	}
	return out
}

// keysBack names back, in a call's decoded arguments v, each member
// whose key the export renamed: walked along root (the renamed schema)
// as nullToAbsent walks. A member whose old name the arguments also hold
// is left as it is, for the check to judge. v is changed in place.
func keysBack(root map[string]any, back map[string]string, v any) {
	if len(back) == 0 {
		return
	}
	w := nullWalker{root: root}
	var walk func(starts []place, v any)
	walk = func(starts []place, v any) {
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
			for _, k := range names {
				var subs []place
				old := ""
				for _, p := range places {
					if o, ok := back[p.ptr+"\x00"+k]; ok && old == "" {
						old = o
					}
					props, _ := p.s["properties"].(map[string]any)
					if sub, ok := props[k].(map[string]any); ok {
						subs = append(subs, place{sub, ijson.AppendToken(ijson.AppendToken(p.ptr, "properties"), k), ""})
					} else if ap, ok := p.s["additionalProperties"].(map[string]any); ok {
						subs = append(subs, place{ap, ijson.AppendToken(p.ptr, "additionalProperties"), ""})
					}
				}
				if len(subs) > 0 {
					walk(subs, x[k])
				}
				if _, taken := x[old]; old != "" && !taken {
					x[old] = x[k]
					delete(x, k)
				}
			}
		case []any:
			for i, e := range x {
				var subs []place
				for _, p := range places {
					prefix, _ := p.s["prefixItems"].([]any)
					if i < len(prefix) {
						if sub, ok := prefix[i].(map[string]any); ok {
							subs = append(subs, place{sub, ijson.AppendIndex(ijson.AppendToken(p.ptr, "prefixItems"), i), ""})
						}
					} else if it, ok := p.s["items"].(map[string]any); ok {
						subs = append(subs, place{it, ijson.AppendToken(p.ptr, "items"), ""})
					}
				}
				if len(subs) > 0 {
					walk(subs, e)
				}
			}
		}
	}
	walk([]place{{root, "", ""}}, v)
}
