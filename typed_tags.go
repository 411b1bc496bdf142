package actions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// The actions tag of a typed action's field: what the json and
// jsonschema tags cannot say. Its grammar, items separated by commas,
// each key at most once:
//
//	actions:"ref=SCHEMA"                 the value names an instance of SCHEMA
//	actions:"enum=plant|depot"           the values allowed, separated by |
//	actions:"default=plant"              the value filled when absent
//	actions:"enum=1|2|3,default=2"       both
//
// A value is read as the field's Go type reads JSON: text for a string
// kind, a JSON number for a number kind, true or false for a bool; it
// cannot hold a comma or a | (give Definition.Parameters for those).
// enum and default sit on a string, number, integer or boolean field or a
// pointer to one; enum also on a slice or array of those (it then applies
// to the items), as ref does.

// readFieldTag reads f's actions tag; dec plans f's type, and checks that
// each enum and default value fits it. at is the property's pointer.
func readFieldTag(f reflect.StructField, dec *decoder, goName, at string) (fieldTag, error) {
	var ft fieldTag
	text, ok := f.Tag.Lookup("actions")
	if !ok {
		return ft, nil
	}
	seen := map[string]bool{}
	var enumText, defText string
	for _, item := range strings.Split(text, ",") {
		key, val, ok := strings.Cut(item, "=")
		if !ok || val == "" || (key != "ref" && key != "enum" && key != "default") {
			return ft, typeRefusal(at, "field "+goName+" has an actions tag other than ref=SCHEMA, enum=A|B..., default=V")
		}
		if seen[key] {
			return ft, typeRefusal(at, "field "+goName+" has "+key+" twice in its actions tag")
		}
		seen[key] = true
		switch key {
		case "ref":
			if !refTarget(f.Type) {
				return ft, typeRefusal(at, "field "+goName+" has a ref tag but is not a string, *string or []string")
			}
			ft.ref = val
		case "enum":
			enumText = val
		case "default":
			defText = val
		}
	}
	if !seen["enum"] && !seen["default"] {
		return ft, nil
	}
	target := scalarTarget(dec)
	if target == nil && !seen["default"] {
		if d := derefDecoder(dec); d.kind == decSlice || d.kind == decArray {
			target, ft.items = scalarTarget(d.elem), true
		}
	}
	if target == nil {
		return ft, typeRefusal(at, "field "+goName+" has an enum or default tag but is not a string, number, integer or boolean (enum: or a slice of one)")
	}
	if seen["enum"] {
		for i, s := range strings.Split(enumText, "|") {
			v, ok := tagValue(s, target)
			if !ok {
				return ft, typeRefusal(at, fmt.Sprintf("enum value %d of field %s does not fit its Go type %s", i+1, goName, target.t))
			}
			ft.enum = append(ft.enum, v)
		}
	}
	if seen["default"] {
		v, ok := tagValue(defText, target)
		if !ok {
			return ft, typeRefusal(at, fmt.Sprintf("the default of field %s does not fit its Go type %s", goName, target.t))
		}
		ft.def, ft.hasDef = v, true
	}
	return ft, nil
}

func derefDecoder(d *decoder) *decoder {
	for d.kind == decPointer {
		d = d.elem
	}
	return d
}

// scalarTarget returns the decoder of the string, number or boolean that
// dec fills (through pointers), or nil.
func scalarTarget(dec *decoder) *decoder {
	d := derefDecoder(dec)
	switch d.kind {
	case decString, decBool, decInt, decUint, decFloat, decNumber, decBigInt:
		return d
	}
	return nil
}

// tagValue reads the text s of a tag value as d's JSON form, and reports
// whether d can hold it (decoding it as a call's value would be).
func tagValue(s string, d *decoder) (any, bool) {
	var v any
	switch d.kind {
	case decString:
		v = s
	case decBool:
		switch s {
		case "true":
			v = true
		case "false":
			v = false
		default:
			return nil, false
		}
	default:
		if !ijson.ValidNumber(s) {
			return nil, false
		}
		v = json.Number(s)
	}
	var st decodeState
	st.path = st.buf[:0]
	d.decode(v, reflect.New(d.t).Elem(), &st)
	return v, len(st.issues) == 0
}

// apply writes the tag's enum and default into the inferred schema of
// its field.
func (ft *fieldTag) apply(s *jsonschema.Schema) error {
	if ft.hasDef {
		text, err := json.Marshal(ft.def)
		if err != nil {
			return err
		}
		s.Default = text
	}
	if ft.enum != nil {
		target := s
		if ft.items && s.Items != nil {
			target = s.Items
		}
		target.Enum = append([]any(nil), ft.enum...)
	}
	return nil
}

// sameJSON reports whether a and b have the same canonical JSON.
func sameJSON(a, b any) bool {
	ta, err1 := CanonicalJSON(a)
	tb, err2 := CanonicalJSON(b)
	return err1 == nil && err2 == nil && string(ta) == string(tb)
}

func typeRefusal(ptr, msg string) *Refusal {
	return refusef(codes.ConstraintViolation, "the Go type cannot be used as the action's parameters",
		Issue{Path: ptr, Keyword: "gotype", Message: msg})
}

// refTarget reports whether a ref tag may sit on a field of type t.
func refTarget(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}
