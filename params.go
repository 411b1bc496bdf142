package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
)

// RefResolver finds the instances of a model schema that a ref value names.
// schema is the ref keyword's value (a model schema name), value the string
// found in the parameters. It returns the key of the instance whose id is
// value, if any, and the keys of the instances whose display name (in any
// language) is value. An error it returns stops the call and is passed to
// the caller wrapped, as the host's failure, never as a refusal.
type RefResolver func(ctx context.Context, schema, value string) (RefMatches, error)

// RefMatches is what a [RefResolver] found. The rule applied to it: an id
// wins over a name equal to it; otherwise exactly one name gives its key;
// no match or several names are refused with invalid_parameters.
type RefMatches struct {
	ID    *string  // the key of the instance whose id is the value, or nil
	Names []string // the keys of the instances whose display name is the value
}

// ParameterSchema is a compiled parameters schema. It is immutable and
// safe for concurrent use.
type ParameterSchema struct {
	doc    map[string]any // the schema, in JSON's Go types
	sch    *jsonschema.Schema
	plan   *schema.Plan
	limits Limits
}

// schemaBase is the URI the schema document is compiled under. The .invalid
// top-level domain (RFC 2606) can never be reached, and the loader refuses
// every URL anyway.
const schemaBase = "https://actions.invalid/parameters.json"

// noParameters is the schema of an action that declares none: an empty
// object, nothing else.
func noParameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
}

// CompileParameters compiles a parameters schema (see [Definition].Parameters
// for the forms accepted; nil means no parameters) with the default limits.
// See [CompileParametersLimits].
func CompileParameters(s any) (*ParameterSchema, error) {
	return CompileParametersLimits(s, Limits{})
}

// CompileParametersLimits compiles a parameters schema as JSON Schema
// 2020-12 with santhosh-tekuri/jsonschema v6, and never reads a file or the
// network. Every refusal is a *Refusal with code constraint_violation whose
// one issue points (RFC 6901) into the schema:
//   - a root that is not "type": "object", a schema that is not JSON, or
//     one larger or deeper than the limits;
//   - a keyword outside JSON Schema 2020-12 and ref, at any depth;
//   - a $schema other than https://json-schema.org/draft/2020-12/schema;
//   - a $ref leaving the schema (file, URL, another document), an $id that
//     repeats another or claims a json-schema.org address;
//   - a ref that is not a non-empty string, or that sits under not, if,
//     contains, propertyNames, unevaluatedItems/Properties;
//   - a default at the root, in a branch of anyOf or oneOf, under not,
//     if, contains or propertyNames, anywhere but directly under
//     properties, or that breaks its own subschema;
//   - anything the 2020-12 metaschema refuses, and a pattern that is not
//     RE2 syntax (Go's regexp, not ECMA-262).
func CompileParametersLimits(s any, limits Limits) (*ParameterSchema, error) {
	return compileParameters(s, limits.withDefaults(), true)
}

// compileParameters compiles with the given limits; objectRoot false lifts
// the rule on the root, for the JSON Schema Test Suite only.
func compileParameters(s any, limits Limits, objectRoot bool) (*ParameterSchema, error) {
	doc, err := schemaDocument(s, limits)
	if err != nil {
		return nil, err
	}
	report, err := schema.Check(doc, schemaBase, limits.MaxSchemaDepth, objectRoot)
	if err != nil {
		var se *schema.Error
		errors.As(err, &se)
		return nil, schemaRefusal(se.Pointer, se.Reason, nil)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaBase, doc); err != nil {
		return nil, schemaRefusal("", "the schema cannot be added", err)
	}
	sch, err := compile(c)
	if err != nil {
		return nil, compileRefusal(err)
	}
	if report.References > 0 {
		if err := schema.Multiplies(sch); err != nil {
			var se *schema.Error
			errors.As(err, &se)
			return nil, schemaRefusal(se.Pointer, se.Reason, nil)
		}
	}
	plan, err := schema.Build(sch, report)
	if err != nil {
		var se *schema.Error
		errors.As(err, &se)
		return nil, schemaRefusal(se.Pointer, se.Reason, nil)
	}
	return &ParameterSchema{doc: doc, sch: sch, plan: plan, limits: limits}, nil
}

// compile runs the engine's compiler, turning a panic into an error.
func compile(c *jsonschema.Compiler) (sch *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicRefusal("JSON Schema compiler", p)
		}
	}()
	return c.Compile(schemaBase)
}

type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) {
	return nil, errors.New("loading schemas is disabled")
}

// schemaDocument turns the accepted forms of a schema into JSON's Go types.
func schemaDocument(s any, limits Limits) (map[string]any, error) {
	if s == nil {
		return noParameters(), nil
	}
	text, ok := textOf(s)
	if !ok {
		b, err := marshalSafely(s)
		if err != nil {
			return nil, schemaRefusal("", "the schema cannot be written as JSON", err)
		}
		text = b
	}
	if len(text) > limits.MaxSchemaBytes {
		return nil, schemaRefusal("", fmt.Sprintf("the schema is larger than %d bytes", limits.MaxSchemaBytes), nil)
	}
	// Each schema level is at most two JSON levels (a keyword's object
	// or array, then the subschema), plus values such as enum's.
	v, err := ijson.Decode(text, 2*limits.MaxSchemaDepth+8)
	if err != nil {
		var je *ijson.Error
		if errors.As(err, &je) {
			r := schemaRefusal(je.Pointer, "the schema is not I-JSON text: "+decodeMessage(je.Reason, 2*limits.MaxSchemaDepth+8), nil)
			r.Issues[0].Keyword = "json"
			return nil, r
		}
		return nil, schemaRefusal("", "the schema is not JSON", nil)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, schemaRefusal("", "the parameters schema must be an object", nil)
	}
	return doc, nil
}

func schemaRefusal(ptr, reason string, cause error) *Refusal {
	r := refusef(CodeConstraintViolation, "invalid parameters schema",
		Issue{Path: ptr, Keyword: lastToken(ptr), Message: reason})
	r.cause = cause
	return r
}

func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return ""
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[i+1:])
}

// compileRefusal reports an engine compile error at the schema pointer the
// engine names, without its text (which may quote the schema).
func compileRefusal(err error) *Refusal {
	var sve *jsonschema.SchemaValidationError
	var breach *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &breach) {
		ptr, kw := firstBreach(breach)
		if kw == "format" && (strings.HasSuffix(ptr, "/pattern") || strings.Contains(ptr, "/patternProperties/")) {
			return schemaRefusal(ptr, "the pattern is not RE2 syntax (Go regexp: no lookaround, no back-references)", err)
		}
		return schemaRefusal(ptr, "the value breaks the JSON Schema 2020-12 metaschema (its "+orValue(kw)+" rule)", err)
	}
	var ire *jsonschema.InvalidRegexError
	if errors.As(err, &ire) {
		return schemaRefusal(locationPointer(ire.URL), "the pattern is not RE2 syntax", err)
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return schemaRefusal("", "a reference leaves the schema", err)
	}
	return schemaRefusal("", "the schema does not compile", err)
}

func orValue(kw string) string {
	if kw == "" {
		return "this value"
	}
	return kw
}

// firstBreach finds the deepest first cause of a metaschema breach, as a
// pointer into the schema and the metaschema keyword that failed.
func firstBreach(ve *jsonschema.ValidationError) (ptr, kw string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	if p := ve.ErrorKind.KeywordPath(); len(p) > 0 {
		kw = p[0]
	}
	return ijson.Pointer(ve.InstanceLocation), kw
}

func locationPointer(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	if p, err := url.PathUnescape(frag); err == nil {
		return p
	}
	return frag
}

// Schema returns a copy of the compiled schema document, in JSON's Go
// types (map[string]any, []any, string, bool, nil, json.Number).
func (ps *ParameterSchema) Schema() map[string]any {
	return schema.Copy(ps.doc).(map[string]any)
}

// ValidateParameters checks params against a definition's schema, without
// a registry, and returns the checked copy. It compiles the schema on
// every call; a host that checks often keeps a [ParameterSchema] from
// [CompileParameters], or registers the action.
func ValidateParameters(ctx context.Context, def Definition, params any, resolve RefResolver) (map[string]any, error) {
	ps, err := CompileParameters(def.Parameters)
	if err != nil {
		return nil, err
	}
	return ps.Check(ctx, params, resolve)
}

// Check checks a call's parameters and returns the copy the body receives.
// In order: it copies params into JSON's Go types, fills the defaults,
// validates against the schema (reporting every breach) and resolves each
// ref through resolve (without a resolver, ref values pass as they are).
// params may be nil (= {}), a map[string]any (nil = {}), JSON text as
// json.RawMessage, []byte or string (the text null = {}), or any value
// encoding/json marshals to an object. The caller's value is never
// changed.
//
// Errors: a *Refusal with code invalid_parameters whose Issues list every
// breach, sorted by path and keyword, with messages that never contain a
// submitted value — for a schema breach (keyword as in the schema), JSON
// text that is not I-JSON RFC 7493 (keyword "json": duplicate member name,
// invalid UTF-8, lone surrogate, a number beyond a double's range,
// nesting or size past the limits), a ref naming no instance or several
// (keyword "ref"), more ref values than Limits.MaxRefs. A resolver's own
// error is returned wrapped, and a resolver's panic as a *Refusal with
// code internal.
func (ps *ParameterSchema) Check(ctx context.Context, params any, resolve RefResolver) (map[string]any, error) {
	if nullText(params) {
		params = nil
	}
	v, err := ps.check(ctx, params, resolve)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil // the root schema is "type": "object"
}

// check is Check for a schema whose root may judge any value.
func (ps *ParameterSchema) check(ctx context.Context, params any, resolve RefResolver) (any, error) {
	v, err := ps.copyParams(params)
	if err != nil {
		return nil, err
	}
	if !ps.plan.Fill(v, ps.limits.MaxParamBytes) {
		return nil, refusef(CodeInvalidParameters, "the defaults would make the parameters too large",
			Issue{Path: "", Keyword: "default", Message: fmt.Sprintf("the defaults to fill pass %d bytes", ps.limits.MaxParamBytes)})
	}
	if err := ps.validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			msg, issues := capIssues("the parameters break the schema", issuesOf(ve))
			return nil, refusef(CodeInvalidParameters, msg, issues...)
		}
		return nil, refusef(CodeInvalidParameters, "the parameters break the schema")
	}
	if resolve != nil && ps.plan.HasRefs() {
		if err := ps.resolveRefs(ctx, v, resolve); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// validate runs the engine. Its panics (none is known once numbers are
// bounded, but the engine is not ours) become internal refusals, so that
// the host keeps serving.
func (ps *ParameterSchema) validate(v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicRefusal("JSON Schema engine", p)
		}
	}()
	return ps.sch.Validate(v)
}

// copyParams returns a fresh copy of params in JSON's Go types.
func (ps *ParameterSchema) copyParams(params any) (any, error) {
	if params == nil {
		return map[string]any{}, nil
	}
	text, ok := textOf(params)
	if !ok {
		return copyParamsValue(params, ps.limits.MaxParamDepth)
	}
	if len(text) > ps.limits.MaxParamBytes {
		return nil, jsonRefusal("", fmt.Sprintf("the parameters are larger than %d bytes", ps.limits.MaxParamBytes))
	}
	v, err := ijson.Decode(text, ps.limits.MaxParamDepth)
	if err != nil {
		var je *ijson.Error
		if errors.As(err, &je) {
			return nil, jsonRefusal(je.Pointer, decodeMessage(je.Reason, ps.limits.MaxParamDepth))
		}
		return nil, jsonRefusal("", "the parameters are not JSON")
	}
	return v, nil
}

// textOf returns v's JSON text when v is given as text: json.RawMessage,
// []byte or string, the forms a schema and parameters may take.
func textOf(v any) ([]byte, bool) {
	switch t := v.(type) {
	case json.RawMessage:
		return t, true
	case []byte:
		return t, true
	case string:
		return []byte(t), true
	}
	return nil, false
}

// nullText reports whether params is JSON text holding only null, which
// stands for no parameters as nil does.
func nullText(params any) bool {
	text, ok := textOf(params)
	return ok && string(bytes.TrimSpace(text)) == "null"
}

func decodeMessage(r ijson.Reason, depth int) string {
	switch r {
	case ijson.DuplicateName:
		return "duplicate member name (RFC 7493 §2.3)"
	case ijson.InvalidUTF8:
		return "invalid UTF-8 (RFC 7493 §2.1)"
	case ijson.LoneSurrogate:
		return "lone surrogate in a string (RFC 7493 §2.1)"
	case ijson.NumberRange:
		return "number beyond the range of a double (RFC 7493 §2.2)"
	case ijson.TooDeep:
		return fmt.Sprintf("nested deeper than %d levels", depth)
	case ijson.TrailingData:
		return "data after the JSON value"
	}
	return "not JSON text"
}

func jsonRefusal(ptr, msg string) *Refusal {
	return refusef(CodeInvalidParameters, "the parameters are not I-JSON text", Issue{Path: ptr, Keyword: "json", Message: msg})
}

// copyError is a fault found while copying parameters; tokens gathers the
// value's location on the way out, innermost first, so that the happy path
// builds no pointer.
type copyError struct {
	tokens []string
	msg    string
}

func (e *copyError) Error() string { return e.msg }

func (e *copyError) refusal() *Refusal {
	toks := make([]string, len(e.tokens))
	for i, t := range e.tokens {
		toks[len(toks)-1-i] = t
	}
	return jsonRefusal(ijson.Pointer(toks), e.msg)
}

// copyParamsValue copies a Go value given as parameters.
func copyParamsValue(v any, depth int) (any, error) {
	c, err := copyValue(v, depth)
	if err != nil {
		return nil, err.refusal()
	}
	return c, nil
}

// copyValue copies a Go value into JSON's Go types, numbers as
// json.Number. Types other than the plain ones go through encoding/json.
func copyValue(in any, depth int) (any, *copyError) {
	// Scalars are immutable: the caller's interface value is shared as it
	// is, which saves boxing each one again.
	switch v := in.(type) {
	case nil, bool:
		return in, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, &copyError{msg: "invalid UTF-8 (RFC 7493 §2.1)"}
		}
		return in, nil
	case json.Number:
		if !ijson.ValidNumber(string(v)) {
			return nil, &copyError{msg: "not a JSON number within the range of a double, or longer than 128 bytes (RFC 7493 §2.2)"}
		}
		return in, nil
	case map[string]any:
		if depth <= 0 {
			return nil, &copyError{msg: "nested deeper than the limit"}
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			if !utf8.ValidString(k) {
				return nil, &copyError{msg: "invalid UTF-8 in a member name (RFC 7493 §2.1)"}
			}
			c, err := copyValue(e, depth-1)
			if err != nil {
				err.tokens = append(err.tokens, k)
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		if depth <= 0 {
			return nil, &copyError{msg: "nested deeper than the limit"}
		}
		a := make([]any, len(v))
		for i, e := range v {
			c, err := copyValue(e, depth-1)
			if err != nil {
				err.tokens = append(err.tokens, strconv.Itoa(i))
				return nil, err
			}
			a[i] = c
		}
		return a, nil
	case float64:
		return floatNumber(v, 64)
	case float32:
		return floatNumber(float64(v), 32)
	case int:
		return json.Number(strconv.FormatInt(int64(v), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case int32:
		return json.Number(strconv.FormatInt(int64(v), 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	}
	rv := reflect.ValueOf(in)
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uintptr:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	}
	b, err := marshalSafely(in)
	if err != nil {
		return nil, &copyError{msg: "the value cannot be written as JSON"}
	}
	d, err := ijson.Decode(b, depth)
	if err != nil {
		return nil, &copyError{msg: "the value is not I-JSON or nests too deep"}
	}
	return d, nil
}

func floatNumber(f float64, bits int) (any, *copyError) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &copyError{msg: "a number must be finite"}
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits)), nil
}

// resolveRefs replaces each ref value of m by the key its resolver gives.
func (ps *ParameterSchema) resolveRefs(ctx context.Context, m any, resolve RefResolver) (err error) {
	sites := ps.plan.Refs(m, nil, ps.limits.MaxRefs)
	if len(sites) > ps.limits.MaxRefs {
		return refusef(CodeInvalidParameters, "too many ref values",
			Issue{Path: "", Keyword: "ref", Message: fmt.Sprintf("more than %d ref values in one call", ps.limits.MaxRefs)})
	}
	defer func() {
		if p := recover(); p != nil {
			err = panicRefusal("ref resolver", p)
		}
	}()
	var issues []Issue
	for i := range sites {
		st := &sites[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		found, err := resolve(ctx, st.Schema, st.Value)
		if err != nil {
			return fmt.Errorf("actions: resolving the ref at %q: %w", ijson.Pointer(st.Path), err)
		}
		switch {
		case found.ID != nil:
			st.Set(*found.ID)
		case len(found.Names) == 1:
			st.Set(found.Names[0])
		case len(found.Names) == 0:
			issues = append(issues, Issue{Path: ijson.Pointer(st.Path), Keyword: "ref", Message: "no instance of " + st.Schema + " has this id or display name"})
		default:
			issues = append(issues, Issue{Path: ijson.Pointer(st.Path), Keyword: "ref",
				Message: fmt.Sprintf("%d instances of %s share this display name; give the id", len(found.Names), st.Schema)})
		}
	}
	if len(issues) > 0 {
		return refusef(CodeInvalidParameters, "some refs name no single instance", sortIssues(issues)...)
	}
	return nil
}

// issuesOf flattens a validation error into issues: one per failed
// keyword, at the pointer of the value at fault.
func issuesOf(ve *jsonschema.ValidationError) []Issue {
	var out []Issue
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
				out = append(out, Issue{ijson.AppendToken(at, name), "required", "is required"})
			}
		case *kind.DependentRequired:
			for _, name := range k.Missing {
				out = append(out, Issue{ijson.AppendToken(at, name), "dependentRequired", "is required when " + k.Prop + " is present"})
			}
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				out = append(out, Issue{ijson.AppendToken(at, name), "additionalProperties", "is not allowed"})
			}
		case *kind.PropertyNames:
			// The engine's causes carry a wrong location; the name is
			// the property's own token.
			out = append(out, Issue{ijson.AppendToken(at, k.Property), "propertyNames", "this property name is not allowed"})
		case *kind.FalseSchema:
			kw := "false"
			if t := lastToken(locationPointer(e.SchemaURL)); t == "unevaluatedProperties" || t == "unevaluatedItems" || t == "additionalProperties" || t == "items" {
				kw = t
			}
			out = append(out, Issue{at, kw, falseMessage(kw)})
		default:
			kw, msg := describe(e.ErrorKind)
			out = append(out, Issue{at, kw, msg})
		}
	}
	walk(ve)
	return sortIssues(out)
}

func falseMessage(kw string) string {
	switch kw {
	case "unevaluatedProperties", "additionalProperties":
		return "is not allowed"
	case "unevaluatedItems", "items":
		return "no item is allowed here"
	}
	return "no value is allowed here"
}

// describe names the failed keyword and says what was expected, from the
// schema's side of the error only.
func describe(k jsonschema.ErrorKind) (kw, msg string) {
	if p := k.KeywordPath(); len(p) > 0 {
		kw = p[0]
	}
	switch k := k.(type) {
	case *kind.Type:
		return "type", "must be " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "enum", fmt.Sprintf("must be one of the %d values the schema lists", len(k.Want))
	case *kind.Const:
		return "const", "must be the value the schema fixes"
	case *kind.Format:
		return "format", "must be a valid " + k.Want
	case *kind.MinProperties:
		return kw, fmt.Sprintf("must have at least %d propert%s", k.Want, pluralY(k.Want))
	case *kind.MaxProperties:
		return kw, fmt.Sprintf("must have at most %d propert%s", k.Want, pluralY(k.Want))
	case *kind.MinItems:
		return kw, fmt.Sprintf("must have at least %d item%s", k.Want, plural(k.Want))
	case *kind.MaxItems:
		return kw, fmt.Sprintf("must have at most %d item%s", k.Want, plural(k.Want))
	case *kind.UniqueItems:
		return kw, fmt.Sprintf("items %d and %d must not be equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return kw, "must contain a matching item"
	case *kind.MinContains:
		return kw, fmt.Sprintf("must contain at least %d matching item%s", k.Want, plural(k.Want))
	case *kind.MaxContains:
		return kw, fmt.Sprintf("must contain at most %d matching item%s", k.Want, plural(k.Want))
	case *kind.MinLength:
		return kw, fmt.Sprintf("must be at least %d character%s long", k.Want, plural(k.Want))
	case *kind.MaxLength:
		return kw, fmt.Sprintf("must be at most %d character%s long", k.Want, plural(k.Want))
	case *kind.Pattern:
		return kw, "must match the pattern " + k.Want
	case *kind.Minimum:
		return kw, "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return kw, "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return kw, "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return kw, "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return kw, "must be a multiple of " + ratString(k.Want)
	case *kind.AnyOf:
		return kw, "must match at least one of the schemas in anyOf"
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return kw, "must match exactly one of the schemas in oneOf, not several"
		}
		return kw, "must match exactly one of the schemas in oneOf"
	case *kind.Not:
		return "not", "must not match the schema in not"
	case *kind.RefCycle:
		return "$ref", "the schema refers to itself without end"
	case *kind.InvalidJsonValue:
		return "type", "is not a JSON value"
	}
	if kw == "" {
		kw = "schema"
	}
	return kw, "breaks " + kw
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

func ratString(r interface{ FloatString(int) string }) string {
	s := r.FloatString(10)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func sortIssues(is []Issue) []Issue {
	sort.Slice(is, func(i, j int) bool {
		if is[i].Path != is[j].Path {
			return is[i].Path < is[j].Path
		}
		if is[i].Keyword != is[j].Keyword {
			return is[i].Keyword < is[j].Keyword
		}
		return is[i].Message < is[j].Message
	})
	out := is[:0]
	for i, x := range is {
		if i == 0 || x != is[i-1] {
			out = append(out, x)
		}
	}
	return out
}
