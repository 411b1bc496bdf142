package actions

import (
	"cmp"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The members of a Go struct as encoding/json reads and writes them. The
// struct walk follows encoding/json's typeFields (Go 1.26, encode.go)
// rather than reflect.VisibleFields, which jsonschema-go uses: Go hides a
// promoted field by its Go name, encoding/json by its JSON name, so
// struct{ Inner; E1 string `json:"e1x"` } with Inner.E1 `json:"e1"` has
// the members e1 and e1x, and two embedded structs each with a field X
// under the names a and b have both. Every part of a typed action (the
// inferred schema, the decoder, the result's encoding) uses this one list.

// jsonField is one member of a struct.
type jsonField struct {
	name      string
	tagged    bool  // the name comes from a json tag
	index     []int // reflect's index path, through embedded structs
	sf        reflect.StructField
	omitEmpty bool
	omitZero  bool
	stringOpt bool // the json option ",string"
	// viaPointer: the member is promoted through an embedded pointer,
	// which may be nil (encoding/json then leaves it out).
	viaPointer bool
	// viaUnexported: that pointer is an unexported field, which no
	// decoder can allocate (encoding/json refuses it too).
	viaUnexported bool
}

// embedded is an embedded struct whose fields are promoted.
type embedded struct {
	typ           reflect.Type
	index         []int
	viaPointer    bool
	viaUnexported bool
}

// jsonFields returns t's members in encoding/json's order (by index),
// after its dominance rules by JSON name: the shallowest field wins, then
// a tagged one; two left at one depth with the same tagging cancel out and
// the name is dropped.
func jsonFields(t reflect.Type) []jsonField {
	var fields []jsonField
	current, next := []embedded{}, []embedded{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validJSONTag(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := jsonField{name: name, tagged: name != "", index: index, sf: sf,
						viaPointer: e.viaPointer, viaUnexported: e.viaUnexported}
					if f.name == "" {
						f.name = sf.Name
					}
					f.setOptions(opts)
					fields = append(fields, f)
					if count[e.typ] > 1 {
						// The same struct embedded twice at one depth:
						// a second copy, so that the name cancels out.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					ptr := sf.Type.Kind() == reflect.Pointer
					next = append(next, embedded{typ: ft, index: index,
						viaPointer:    e.viaPointer || ptr,
						viaUnexported: e.viaUnexported || (ptr && !sf.IsExported())})
				}
			}
		}
	}
	return dominantFields(fields)
}

// setOptions sets the field's json tag options (omitempty, omitzero,
// string); others are ignored, as encoding/json ignores them.
func (f *jsonField) setOptions(opts string) {
	for _, o := range strings.Split(opts, ",") {
		switch o {
		case "omitempty":
			f.omitEmpty = true
		case "omitzero":
			f.omitZero = true
		case "string":
			f.stringOpt = true
		}
	}
}

// dominantFields keeps, of the fields that share a JSON name, the
// dominant one as encoding/json picks it (the shallowest, then the
// tagged), and drops a name that two fields hold as equals; the kept
// fields come in index order.
func dominantFields(fields []jsonField) []jsonField {
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		// The first is the dominant one, unless the second is as deep
		// and as tagged.
		if j-i == 1 || len(fields[i].index) != len(fields[i+1].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// validJSONTag is encoding/json's isValidTag: a name it accepts from a
// tag (any other leaves the Go name).
func validJSONTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// wordPrefix is what jsonschema-go refuses at the start of a jsonschema
// tag ("WORD="), kept for its future use.
var wordPrefix = regexp.MustCompile("^[^ \t\n]*=")
