package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/actionreg/actions/codes"
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
	// doc is the schema's JSON without insignificant whitespace, kept as
	// text rather than as the decoded document, whose maps weigh several
	// times more for every registered action, and decoded again by the
	// few readers of the document (tools, definitions).
	doc    *ijson.Kept
	sch    *jsonschema.Schema
	plan   *schema.Plan
	limits Limits
}

// errNotCompiled is the cause of checking with a ParameterSchema that
// CompileParameters did not make.
var errNotCompiled = errors.New("actions: a ParameterSchema is made by CompileParameters; its zero value checks nothing")

// schemaBase is the URI the schema document is compiled under. The .invalid
// top-level domain (RFC 2606) can never be reached, and the loader refuses
// every URL anyway.
const schemaBase = "https://actions.invalid/parameters.json"

// noParameters is the schema of an action that declares none: an empty
// object, nothing else.
func noParameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
}

// CompileParameters compiles a parameters schema as JSON Schema
// 2020-12 with santhosh-tekuri/jsonschema v6, under limits (a zero field
// is its default; a registry passes its own: [Registry.Limits]), and never reads a file or the
// network. s takes the forms of [Definition].Parameters; nil is the schema
// of an action without parameters (an object with no property). Every
// refusal is a *Refusal with code constraint_violation whose one issue
// points (RFC 6901) into the schema:
//   - a root that is not "type": "object", a schema that is not JSON, or
//     one larger or deeper than the limits;
//   - a keyword outside JSON Schema 2020-12 and ref, at any depth;
//   - a $schema other than https://json-schema.org/draft/2020-12/schema;
//   - a $ref leaving the schema (file, URL, another document), an $id that
//     repeats another or claims a json-schema.org address;
//   - a ref that is not a non-empty string, or that sits under not, if,
//     contains, propertyNames, unevaluatedItems/Properties;
//   - a default at the root, in a branch of anyOf or oneOf, under not,
//     if, contains or propertyNames (also through $ref), one no property
//     gets (neither directly under properties nor at a schema a $ref
//     there leads to, with no default beside that $ref), or one that
//     breaks its own subschema;
//   - anything the 2020-12 metaschema refuses, and a pattern that is not
//     RE2 syntax (Go's regexp, not ECMA-262).
func CompileParameters(s any, limits Limits) (*ParameterSchema, error) {
	ps, _, err := compileParameters(s, limits.withDefaults(), true)
	return ps, err
}

// compileParameters compiles with the given limits; objectRoot false lifts
// the rule on the root, for the JSON Schema Test Suite only. It also
// returns the schema document, for the registration's own checks.
func compileParameters(s any, limits Limits, objectRoot bool) (*ParameterSchema, map[string]any, error) {
	kept, doc, err := schemaDocument(s, limits)
	if err != nil {
		return nil, nil, err
	}
	report, err := schema.Check(doc, schemaBase, limits.MaxSchemaDepth, objectRoot)
	if err != nil {
		var se *schema.Error
		errors.As(err, &se)
		return nil, nil, schemaRefusal(se.Pointer, se.Keyword, se.Reason, nil)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.RegisterVocabulary(schema.NameCheck())
	c.AssertVocabs()
	if err := c.AddResource(schemaBase, doc); err != nil {
		return nil, nil, schemaRefusal("", "json", "the schema cannot be added", err)
	}
	sch, err := compile(c)
	if err != nil {
		return nil, nil, compileRefusal(err)
	}
	if report.References > 0 {
		if err := schema.Multiplies(sch); err != nil {
			var se *schema.Error
			errors.As(err, &se)
			return nil, nil, schemaRefusal(se.Pointer, se.Keyword, se.Reason, nil)
		}
	}
	plan, err := schema.Build(sch, report, limits.MaxParamBytes)
	if err == nil {
		err = plan.Contradictions(limits.MaxParamBytes)
	}
	if err != nil {
		var se *schema.Error
		errors.As(err, &se)
		return nil, nil, schemaRefusal(se.Pointer, se.Keyword, se.Reason, nil)
	}
	return &ParameterSchema{doc: kept, sch: sch, plan: plan, limits: limits}, doc, nil
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
	return nil, errors.New("actions: loading schemas is disabled")
}

// noParametersText is the text of noParameters.
const noParametersText = `{"additionalProperties":false,"properties":{},"type":"object"}`

// schemaDocument turns the accepted forms of a schema into JSON's Go
// types, kept as its text without insignificant whitespace.
func schemaDocument(s any, limits Limits) (*ijson.Kept, map[string]any, error) {
	if s == nil {
		k, v, err := ijson.Keep(noParametersText, 0)
		if err != nil {
			return nil, nil, err
		}
		return k, v.(map[string]any), nil
	}
	text, ok := ijson.Text(s)
	if !ok {
		b, err := marshalSafely(s)
		if err != nil {
			return nil, nil, schemaRefusal("", "json", "the schema cannot be written as JSON", err)
		}
		text = b
	}
	if len(text) > limits.MaxSchemaBytes {
		return nil, nil, schemaRefusal("", "json", fmt.Sprintf("the schema is larger than %d bytes", limits.MaxSchemaBytes), nil)
	}
	// Each schema level is at most two JSON levels (a keyword's object
	// or array, then the subschema), plus values such as enum's.
	depth := 2*limits.MaxSchemaDepth + 8
	kept := text
	var compact bytes.Buffer
	compact.Grow(len(text))
	if json.Compact(&compact, text) == nil {
		kept = compact.Bytes()
	}
	k, v, err := ijson.Keep(string(kept), depth)
	if err != nil {
		// The fault as located in the text given.
		if _, derr := ijson.Decode(text, depth); derr != nil {
			err = derr
		}
		var je *ijson.Error
		if errors.As(err, &je) && je.Reason == ijson.TooDeep {
			// Said in schema levels, the limit the host set, as the
			// schema's own check says it.
			return nil, nil, schemaRefusal(je.Pointer, "json", fmt.Sprintf("schema nesting deeper than %d levels", limits.MaxSchemaDepth), nil)
		}
		if je != nil {
			return nil, nil, schemaRefusal(je.Pointer, "json", "the schema is not I-JSON text: "+textFault(je, text, depth), nil)
		}
		return nil, nil, schemaRefusal("", "json", "the schema is not JSON", nil)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, nil, schemaRefusal("", "type", "the parameters schema must be an object", nil)
	}
	return k, doc, nil
}

// schemaRefusal refuses a schema with one issue at ptr. An empty kw is
// taken from ptr: the keyword it points at, or into.
func schemaRefusal(ptr, kw, reason string, cause error) *Refusal {
	if kw == "" {
		kw = schema.KeywordOf(ptr)
	}
	r := refusef(codes.ConstraintViolation, "invalid parameters schema",
		Issue{Path: ptr, Keyword: kw, Message: reason})
	r.cause = cause
	return r
}

// compileRefusal reports an engine compile error at the schema pointer the
// engine names, without its text (which may quote the schema).
func compileRefusal(err error) *Refusal {
	var sve *jsonschema.SchemaValidationError
	var breach *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &breach) {
		ptr, kw := firstBreach(breach)
		if kw == "format" && (strings.HasSuffix(ptr, "/pattern") || strings.Contains(ptr, "/patternProperties/")) {
			return schemaRefusal(ptr, "", "the pattern is not RE2 syntax (Go regexp: no lookaround, no back-references)", err)
		}
		return schemaRefusal(ptr, "", "the value breaks the JSON Schema 2020-12 metaschema (its "+orValue(kw)+" rule)", err)
	}
	var ire *jsonschema.InvalidRegexError
	if errors.As(err, &ire) {
		return schemaRefusal(locationPointer(ire.URL), "", "the pattern is not RE2 syntax", err)
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return schemaRefusal("", "$ref", "a reference leaves the schema", err)
	}
	return schemaRefusal("", "schema", "the schema does not compile", err)
}

func orValue(kw string) string {
	if kw == "" {
		return "this value"
	}
	return kw
}

// firstBreach finds the metaschema breach to report: of the innermost
// breaches, the one at the first pointer in byte order (then keyword), so
// that the same schema gets the same answer whatever the order of Go's
// maps; as a pointer into the schema and the metaschema keyword that
// failed.
func firstBreach(ve *jsonschema.ValidationError) (ptr, kw string) {
	first := true
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p, k := ijson.Pointer(e.InstanceLocation), ""
		if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
			k = kp[0]
		}
		if first || p < ptr || (p == ptr && k < kw) {
			ptr, kw, first = p, k, false
		}
	}
	walk(ve)
	return ptr, kw
}

func locationPointer(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	if p, err := url.PathUnescape(frag); err == nil {
		return p
	}
	return frag
}

// schema returns a copy of the compiled schema document, in JSON's Go
// types (map[string]any, []any, string, bool, nil, json.Number).
func (ps *ParameterSchema) schema() map[string]any {
	if ps == nil || ps.doc == nil {
		return nil // a ParameterSchema not made by CompileParameters
	}
	return ps.doc.Decode().(map[string]any)
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
// code internal. A breach that the defaults made (at a member they filled,
// or one the parameters as sent do not have; a missing member excepted)
// is the schema contradicting itself: a *Refusal with code internal and
// no issues, whose cause lists the breaches for the host. A ParameterSchema
// not made by [CompileParameters] (its zero value) refuses every call with
// internal: the host's fault, never the caller's.
func (ps *ParameterSchema) Check(ctx context.Context, params any, resolve RefResolver) (map[string]any, error) {
	if ps == nil || ps.sch == nil {
		// The host's mistake, not the caller's: no schema was compiled.
		return nil, internalRefusal("the parameters schema was not compiled", errNotCompiled)
	}
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
		return nil, refusef(codes.InvalidParameters, "the defaults would make the parameters too large",
			Issue{Path: "", Keyword: "default", Message: fmt.Sprintf("the defaults to fill pass %d bytes", ps.limits.MaxParamBytes)})
	}
	if err := ps.validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			issues := issuesOf(ve)
			if ps.plan.HasDefaults() {
				if r := ps.contradiction(params, v, issues); r != nil {
					return nil, r
				}
			}
			msg, issues := capIssues("the parameters break the schema", issues)
			return nil, refusef(codes.InvalidParameters, msg, issues...)
		}
		return nil, refusef(codes.InvalidParameters, "the parameters break the schema")
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

// resolveRefs replaces each ref value of m by the key its resolver gives.
func (ps *ParameterSchema) resolveRefs(ctx context.Context, m any, resolve RefResolver) (err error) {
	sites := ps.plan.Refs(m, nil, ps.limits.MaxRefs)
	if len(sites) > ps.limits.MaxRefs {
		return refusef(codes.InvalidParameters, "too many ref values",
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
		return refusef(codes.InvalidParameters, "some refs name no single instance", sortIssues(issues)...)
	}
	return nil
}

// lastToken returns the last reference token of a JSON Pointer, unescaped.
func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return ""
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr[i+1:])
}

// copyParams returns a fresh copy of params in JSON's Go types.
func (ps *ParameterSchema) copyParams(params any) (any, error) {
	if params == nil {
		return map[string]any{}, nil
	}
	text, ok := ijson.Text(params)
	if !ok {
		return copyParamsValue(params, ps.limits.MaxParamDepth)
	}
	if len(text) > ps.limits.MaxParamBytes {
		return nil, sizeRefusal(ps.limits.MaxParamBytes)
	}
	v, err := ijson.Decode(text, ps.limits.MaxParamDepth)
	if err != nil {
		var je *ijson.Error
		if errors.As(err, &je) {
			return nil, jsonRefusal(je.Pointer, textFault(je, text, ps.limits.MaxParamDepth))
		}
		return nil, jsonRefusal("", "the parameters are not JSON")
	}
	return v, nil
}

// contradiction returns an internal refusal when some breach of the
// filled parameters v is the defaults' doing: it lies at or under a
// member a default filled, or at an object holding one (maxProperties,
// not...) that the caller's parameters without the defaults do not
// break. A missing member (required, dependentRequired) never is, nor a
// breach of a value the caller sent that holds no filled member: the
// caller can fix those. params is what the caller gave.
func (ps *ParameterSchema) contradiction(params any, v any, issues []Issue) *Refusal {
	sent, err := ps.copyParams(params)
	if err != nil {
		return nil
	}
	var filled []string
	filledPaths(sent, v, "", &filled)
	var own map[[2]string]bool
	var fault []Issue
	for _, is := range issues {
		if is.Keyword == "required" || is.Keyword == "dependentRequired" {
			continue
		}
		if underAny(is.Path, filled) {
			fault = append(fault, is)
			continue
		}
		if !holdsFilled(is.Path, filled) {
			// A value the caller sent, holding nothing the defaults
			// filled: its breach is the caller's to fix, even when a
			// default chose the branch that judges it.
			continue
		}
		if own == nil {
			own = map[[2]string]bool{}
			if err := ps.validate(sent); err != nil {
				if ve, ok := err.(*jsonschema.ValidationError); ok {
					for _, o := range issuesOf(ve) {
						own[[2]string{o.Path, o.Keyword}] = true
					}
				}
			}
		}
		if !own[[2]string{is.Path, is.Keyword}] {
			fault = append(fault, is)
		}
	}
	if len(fault) == 0 {
		return nil
	}
	r := NewRefusal(codes.Internal, "the action's parameters schema contradicts itself: the defaults it filled break it")
	r.cause = &contradictionError{issues: fault}
	return r
}
