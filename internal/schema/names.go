package schema

import (
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// The engine (jsonschema v6.0.3) files a propertyNames breach under its
// validator's location slice without copying it, so a sibling validated
// afterwards overwrites it: the breach then points at whichever member was
// validated last, a different one from run to run with Go's map order
// (upstream pull requests #260 and #269, unmerged). NameCheck reports the
// same breaches again from an extension, whose errors the engine files at
// a copy of the location taken while the object is being validated; the
// engine's own propertyNames errors are then ignored.

// NameCheckURL is the URL the extension is registered under.
const NameCheckURL = "https://actions.invalid/vocab/property-names"

// NameCheck is the vocabulary to register on a compiler (with
// AssertVocabs, so that 2020-12 schemas use it) before compiling.
func NameCheck() *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{
		URL: NameCheckURL,
		Compile: func(ctx *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			if _, ok := obj["propertyNames"]; !ok {
				return nil, nil
			}
			return &nameCheck{names: ctx.Enqueue([]string{"propertyNames"})}, nil
		},
	}
}

type nameCheck struct {
	names *jsonschema.Schema
}

// Validate reports, in one error at the object's location, the member
// names the propertyNames subschema refuses, sorted.
func (n *nameCheck) Validate(ctx *jsonschema.ValidatorContext, v any) {
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		return
	}
	var bad []string
	for name := range obj {
		if n.names.Validate(name) != nil {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		ctx.AddError(&NameBreach{Names: bad})
	}
}

// NameBreach is the error kind NameCheck reports: the names of the
// object's members that its propertyNames subschema refuses.
type NameBreach struct {
	Names []string
}

// KeywordPath implements jsonschema.ErrorKind.
func (*NameBreach) KeywordPath() []string { return []string{"propertyNames"} }

// LocalizedString implements jsonschema.ErrorKind; it names no member.
func (b *NameBreach) LocalizedString(p *message.Printer) string {
	return p.Sprintf("%d property names are not allowed", len(b.Names))
}
