// Package schema holds what the registry learns from a parameters schema
// before compiling it: which keywords it uses (JSON Schema 2020-12 and the
// registry's ref), where defaults and refs sit, and whether every $ref
// stays inside the document. The JSON Schema engine itself is
// santhosh-tekuri/jsonschema v6; this package never validates instances.
package schema

// How a keyword's value holds subschemas.
type shape uint8

const (
	leaf      shape = iota // no subschema
	single                 // one subschema
	schemaMap              // an object of subschemas
	schemaArr              // an array of subschemas
)

// keywords lists every keyword of JSON Schema 2020-12 (core, applicator,
// unevaluated, validation, meta-data, format-annotation and content
// vocabularies) and the registry's ref. Anything else is refused: the
// engine would silently ignore it, and a typo such as maxlength must not
// pass for a constraint.
var keywords = map[string]shape{
	// core
	"$schema": leaf, "$id": leaf, "$ref": leaf, "$anchor": leaf,
	"$dynamicRef": leaf, "$dynamicAnchor": leaf, "$vocabulary": leaf,
	"$comment": leaf, "$defs": schemaMap,
	// applicator
	"allOf": schemaArr, "anyOf": schemaArr, "oneOf": schemaArr, "not": single,
	"if": single, "then": single, "else": single,
	"dependentSchemas": schemaMap, "prefixItems": schemaArr, "items": single,
	"contains": single, "properties": schemaMap, "patternProperties": schemaMap,
	"additionalProperties": single, "propertyNames": single,
	// unevaluated
	"unevaluatedItems": single, "unevaluatedProperties": single,
	// validation
	"type": leaf, "enum": leaf, "const": leaf, "multipleOf": leaf,
	"maximum": leaf, "exclusiveMaximum": leaf, "minimum": leaf,
	"exclusiveMinimum": leaf, "maxLength": leaf, "minLength": leaf,
	"pattern": leaf, "maxItems": leaf, "minItems": leaf, "uniqueItems": leaf,
	"maxContains": leaf, "minContains": leaf, "maxProperties": leaf,
	"minProperties": leaf, "required": leaf, "dependentRequired": leaf,
	// meta-data
	"title": leaf, "description": leaf, "default": leaf, "deprecated": leaf,
	"readOnly": leaf, "writeOnly": leaf, "examples": leaf,
	// format-annotation
	"format": leaf,
	// content
	"contentEncoding": leaf, "contentMediaType": leaf, "contentSchema": single,
	// the registry's keyword: the value names an instance of a model schema
	"ref": leaf,
}

// opaque keywords hold subschemas whose instances are never the
// parameters' own values (a branch that may fail, a property name, a
// condition): a default or a ref there can never take effect.
var opaque = map[string]string{
	"not":                   "not",
	"if":                    "if",
	"contains":              "contains",
	"propertyNames":         "propertyNames",
	"unevaluatedItems":      "unevaluatedItems",
	"unevaluatedProperties": "unevaluatedProperties",
	"contentSchema":         "contentSchema",
}

// Draft is the only dialect accepted in $schema.
const Draft = "https://json-schema.org/draft/2020-12/schema"
