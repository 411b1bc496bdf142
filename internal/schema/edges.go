package schema

import (
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// child is one subschema of a compiled schema, with how it applies.
type child struct {
	s *jsonschema.Schema
	// sameValue: it applies to the value its parent applies to ($ref,
	// allOf, anyOf, oneOf, not, if, then, else, dependentSchemas).
	sameValue bool
	// tried: its outcome may be discarded (a branch of anyOf or oneOf,
	// not, if, contains, propertyNames, unevaluated*), so a default
	// there can never be filled.
	tried bool
	// member labels the members or entries it applies to, for a child
	// that is not sameValue: a property name, "*" for names no property
	// declares, "~pattern" for patternProperties, "#i" for prefixItems
	// entry i, "[]" for the other entries; "" for property names.
	member string
}

// eachChild calls fn for every subschema of s: the one list of the
// compiled schema's keywords that hold subschemas.
func eachChild(s *jsonschema.Schema, fn func(child)) {
	add := func(c *jsonschema.Schema, sameValue, tried bool, member string) {
		if c != nil {
			fn(child{c, sameValue, tried, member})
		}
	}
	add(s.Ref, true, false, "")
	for _, c := range s.AllOf {
		add(c, true, false, "")
	}
	for _, c := range s.AnyOf {
		add(c, true, true, "")
	}
	for _, c := range s.OneOf {
		add(c, true, true, "")
	}
	add(s.Not, true, true, "")
	add(s.If, true, true, "")
	add(s.Then, true, false, "")
	add(s.Else, true, false, "")
	for _, c := range s.DependentSchemas {
		add(c, true, false, "")
	}
	for name, c := range s.Properties {
		add(c, false, false, name)
	}
	for re, c := range s.PatternProperties {
		add(c, false, false, "~"+re.String())
	}
	if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		add(c, false, false, "*")
	}
	add(s.UnevaluatedProperties, false, true, "*")
	add(s.PropertyNames, false, true, "")
	for i, c := range s.PrefixItems {
		add(c, false, false, "#"+strconv.Itoa(i))
	}
	add(s.Items2020, false, false, "[]")
	add(s.Contains, false, true, "[]")
	add(s.UnevaluatedItems, false, true, "[]")
}
