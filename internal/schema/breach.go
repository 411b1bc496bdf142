package schema

import (
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/actionreg/actions/internal/ijson"
)

// Breach is one failed keyword of a validation, at the JSON Pointer of the
// value at fault: for a member that is missing (required,
// dependentRequired) or refused (additionalProperties, propertyNames),
// the member's own pointer.
type Breach struct {
	Path    string
	Keyword string
	Kind    jsonschema.ErrorKind
}

// Breaches flattens a validation error into one breach per failed
// keyword, in the engine's order. allOf, $ref, then/else and groups are
// not breaches themselves: the breaches inside them are listed. anyOf,
// oneOf and not are one breach each, without their branches' (which
// would contradict each other). The engine's own propertyNames errors are
// dropped for NameCheck's.
func Breaches(err error) []Breach {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil
	}
	var out []Breach
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		at := ijson.Pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
			for _, c := range e.Causes {
				walk(c)
			}
		case *kind.Required:
			for _, name := range k.Missing {
				out = append(out, Breach{ijson.AppendToken(at, name), "required", k})
			}
		case *kind.DependentRequired:
			for _, name := range k.Missing {
				out = append(out, Breach{ijson.AppendToken(at, name), "dependentRequired", k})
			}
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				out = append(out, Breach{ijson.AppendToken(at, name), "additionalProperties", k})
			}
		case *kind.PropertyNames:
			// Filed at a location a later sibling may overwrite;
			// NameCheck reports the same names at the right one.
		case *NameBreach:
			for _, name := range k.Names {
				out = append(out, Breach{ijson.AppendToken(at, name), "propertyNames", k})
			}
		case *kind.FalseSchema:
			kw := "false"
			if t := KeywordOf(fragment(e.SchemaURL)); t == "unevaluatedProperties" || t == "unevaluatedItems" || t == "additionalProperties" || t == "items" {
				kw = t
			}
			out = append(out, Breach{at, kw, k})
		case *kind.Not:
			out = append(out, Breach{at, "not", k})
		case *kind.RefCycle:
			out = append(out, Breach{at, "$ref", k})
		case *kind.InvalidJsonValue:
			out = append(out, Breach{at, "type", k})
		default:
			kw := "schema"
			if p := k.KeywordPath(); len(p) > 0 {
				kw = p[0]
			}
			out = append(out, Breach{at, kw, k})
		}
	}
	walk(ve)
	return out
}
