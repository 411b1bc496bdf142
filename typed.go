package actions

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// Typed returns an action whose body takes its parameters as a Go value P
// and returns its result as a Go value R. It is an ordinary [Action]: the
// registry checks each call against the parameters schema as for any
// action, then decodes the checked copy (defaults filled, refs resolved)
// into a P, runs body, and records R's canonical JSON in the run entry;
// [Registry.Run] returns the R itself to a Go caller. Batches, replay,
// tools and mcpserver see no difference. docs/typed.md compares it with
// the MCP Go SDK's mcp.AddTool.
//
// The parameters schema:
//   - when def.Parameters is nil, it is inferred from P with
//     github.com/google/jsonschema-go (jsonschema.ForType, the function
//     the official MCP Go SDK uses), so the struct tags written for the
//     SDK mean the same here: json for names and omitempty (a field
//     without omitempty or omitzero is required), jsonschema for a
//     description. The tag actions:"ref=SCHEMA" on a string field (or
//     *string, []string) adds the ref keyword: the value names an
//     instance of the model schema SCHEMA and reaches the body resolved
//     (see [RefResolver]); actions:"enum=A|B,default=A" adds an enum and
//     a default, each value read as the field's Go type reads JSON (items
//     separated by commas: ref=, enum=, default=, each at most once).
//     The members are those encoding/json selects, by JSON name (the
//     shallowest field wins, then a tagged one; two left at one depth
//     drop the name), and a field promoted through an embedded pointer
//     is optional. A struct has additionalProperties false;
//     *big.Int is "type": "integer", json.Number "type": "number",
//     time.Time and []byte strings (RFC 3339, base64);
//   - when def.Parameters is given (to declare bounds, formats,
//     patterns: what tags cannot say), it is kept, and checked
//     against P when Register runs: every required property must have a
//     field, every field a property, and their types must agree (a
//     property of type number for an int field is refused, as 1.5 would
//     pass the schema and fit no int).
//
// P must be a struct, a pointer to one, or a map with string keys
// (map[string]any receives the checked copy as it is). Decoding follows
// encoding/json's names and rules, with numbers exact: an integer field
// takes any JSON number whose value is an integer within the field's
// range (1e2 and 100.0 fit an int8; 300 and 1.5 do not); a float field
// takes the nearest value; json.Number and *big.Int fields take the
// number's exact value; time.Time takes RFC 3339 text; a pointer field
// stays nil when its property is absent; null leaves a field at its zero
// value. A value that does not fit its field refuses the call with
// invalid_parameters, one issue (keyword "type") at each value's
// pointer, and the body does not run.
//
// The output schema, when def.OutputSchema is nil and R is not an
// interface type, is inferred from R the same way; for a pointer R, from
// the type it points to. [Registry.Run] checks each result against it
// (see [Definition].OutputSchema): a typed nil pointer is JSON null and
// breaks an object schema (output_invalid: return a pointer to a value);
// a nil slice is null and passes, since jsonschema-go allows null for a
// slice, and so does a nil map below the root (the inferred schema
// allows null wherever encoding/json writes a nil map as null); an empty struct is {} and passes its schema, which allows no
// property.
//
// Errors: Typed itself never fails; what it finds wrong is kept in the
// action and returned by Register, as a *Refusal constraint_violation
// whose issues point into the action's schemas (/parameters/properties/x,
// /outputSchema/...) and name the Go type and field: a
// nil body; a P that is not a struct or string-keyed map; a type that
// refers to itself, or holds a channel, a function, a complex number, an
// unsafe pointer, a map with keys other than strings, an interface other
// than any (in P), a field with the json option ",string", a field (in P)
// promoted through an embedded pointer to an unexported struct field, an
// actions tag outside its grammar or with an enum or default value the
// field cannot hold (at the field's pointer), or (for inference) a type
// with its own JSON methods that jsonschema-go does not know; a
// disagreement between the given schema and P (a tag's enum or default
// the property does not say included).
func Typed[P, R any](def Definition, body func(ctx context.Context, p P, t *Trace) (R, error)) Action {
	a := Action{Definition: def}
	if body == nil {
		a.err = refusef(codes.ConstraintViolation, "the action has no body",
			Issue{Path: "/run", Keyword: "run", Message: "the body is nil"})
		return a
	}
	dec, doc, err := typedParameters(def.Parameters, reflect.TypeFor[P]())
	if err != nil {
		a.err = inAction(err, "/parameters")
		return a
	}
	if def.Parameters == nil {
		a.Parameters = doc
	} else {
		a.agree = func(doc map[string]any) error { return inAction(agreeWith(doc, dec), "/parameters") }
	}
	out, plan, err := inferOutput(reflect.TypeFor[R]())
	switch {
	case err != nil && def.OutputSchema == nil:
		a.err = inAction(err, "/outputSchema")
		return a
	case err == nil && def.OutputSchema == nil && out != nil:
		a.OutputSchema = out
	}
	if plan != nil {
		a.encode, a.release = plan.encodeResult, plan.releaseResult
	}
	decode := decoderFunc[P](dec)
	a.Run = func(ctx context.Context, params map[string]any, t *Trace) (any, error) {
		p, err := decode(params)
		if err != nil {
			return nil, err
		}
		r, err := body(ctx, p, t)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return a
}

// inAction returns err with each issue's pointer, which points into a
// schema, prefixed by the schema's own pointer in the action
// ("/parameters", "/outputSchema"), as Register reports every fault.
func inAction(err error, prefix string) error {
	r := asRefusal(err)
	if r == nil {
		return err
	}
	c := *r
	c.Issues = make([]Issue, len(r.Issues))
	for i, is := range r.Issues {
		is.Path = prefix + is.Path
		c.Issues[i] = is
	}
	return &c
}

// decoderFunc returns the function that turns the checked copy into a P.
func decoderFunc[P any](dec *decoder) func(map[string]any) (P, error) {
	if dec.kind == decJSONMap {
		return func(m map[string]any) (P, error) { return any(m).(P), nil }
	}
	return func(m map[string]any) (P, error) {
		var p P
		var st decodeState
		st.path = st.buf[:0]
		dec.decode(m, reflect.ValueOf(&p).Elem(), &st)
		if len(st.issues) > 0 {
			msg, issues := capIssues("the parameters do not fit the action's Go type", sortIssues(st.issues))
			return p, refusef(codes.InvalidParameters, msg, issues...)
		}
		return p, nil
	}
}

// typedParameters plans the decoding of P and, without a given schema,
// infers the parameters schema; with one, it checks that P agrees.
func typedParameters(given any, pt reflect.Type) (*decoder, map[string]any, error) {
	root := pt
	if root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	switch {
	case root.Kind() == reflect.Struct:
	case root.Kind() == reflect.Map && root.Key().Kind() == reflect.String:
	default:
		return nil, nil, typeRefusal("", fmt.Sprintf("the parameters type %s is not a struct or a map with string keys: parameters are a JSON object", pt))
	}
	w := &typeWalk{input: true, overrides: map[reflect.Type]*jsonschema.Schema{}}
	dec, err := w.plan(pt, "", "")
	if err != nil {
		return nil, nil, err
	}
	if given != nil {
		return dec, nil, nil // compared at Register, once compiled
	}
	// A pointer P is never nil in a body: infer from what it points to,
	// so that the root is "type": "object", not ["null", "object"].
	doc, err := w.infer(root)
	if err != nil {
		return nil, nil, err
	}
	applyRefs(doc, dec)
	nullMaps(doc, dec, true)
	return dec, doc, nil
}

// inferOutput infers R's output schema (nil for an interface R) and plans
// the encoding of its results.
func inferOutput(rt reflect.Type) (map[string]any, *decoder, error) {
	if rt.Kind() == reflect.Interface {
		return nil, nil, nil
	}
	w := &typeWalk{overrides: map[reflect.Type]*jsonschema.Schema{}}
	plan, err := w.plan(rt, "", "")
	var doc map[string]any
	if err == nil {
		// A pointer R is described by what it points to, as the MCP Go
		// SDK does: a nil pointer is then null, which breaks the schema.
		st := rt
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		doc, err = w.infer(st)
		if err == nil {
			nullMaps(doc, plan, true)
		}
	}
	if err != nil {
		r := asRefusal(err)
		r.Message = "the result type cannot be described by an output schema"
		return nil, nil, r
	}
	return doc, plan, nil
}

// typeSchemas are the schemas of the types whose JSON form is not what
// their Go structure says; jsonschema-go knows time.Time, slog.Level and
// the big numbers as strings, but encoding/json writes a big.Int and a
// json.Number as numbers.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[big.Int]():     {Type: "integer"},
		reflect.TypeFor[json.Number](): {Type: "number"},
		// Any JSON value: the decoder writes its canonical text.
		reflect.TypeFor[json.RawMessage](): {},
	}
}

// knownJSON are the types with JSON methods that the decoder or
// jsonschema-go know.
var knownJSON = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():   true,
	reflect.TypeFor[big.Int]():     true,
	reflect.TypeFor[big.Float]():   true,
	reflect.TypeFor[big.Rat]():     true,
	reflect.TypeFor[slog.Level]():  true,
	reflect.TypeFor[json.Number](): true,
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// hasJSONMethods reports whether t or *t writes or reads its own JSON.
func hasJSONMethods(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, m := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(m) || pt.Implements(m) {
			return true
		}
	}
	return false
}

// typeWalk checks a Go type and plans its decoding. input is true for
// parameters (the decoder must be able to fill every part); overrides
// gathers the schemas jsonschema-go is to take as they are: byte slices,
// which encoding/json writes as base64 strings, and every struct, built
// from the members encoding/json selects (structSchema).
type typeWalk struct {
	input     bool
	stack     []reflect.Type // the named types being walked, for cycles
	overrides map[reflect.Type]*jsonschema.Schema
	custom    bool // a type with its own JSON methods was met
}

// plan walks t, at schema pointer ptr, reached through the Go field
// named field ("Order.Lines"; "" at the root).
func (w *typeWalk) plan(t reflect.Type, ptr, field string) (*decoder, error) {
	where := func() string {
		if field == "" {
			return t.String()
		}
		return "field " + field + " (" + t.String() + ")"
	}
	for _, s := range w.stack {
		if s == t {
			return nil, typeRefusal(ptr, fmt.Sprintf("%s refers to the type %s it is part of: an inferred schema cannot refer to itself", where(), t))
		}
	}
	if t.Name() != "" {
		w.stack = append(w.stack, t)
		defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	}
	d := &decoder{t: t}
	if kind, ok := w.jsonKind(t); ok {
		d.kind = kind
		return d, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		d.kind = decBool
	case reflect.String:
		d.kind = decString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.kind = decInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.kind = decUint
	case reflect.Float32, reflect.Float64:
		d.kind = decFloat
	case reflect.Interface:
		if w.input && t.NumMethod() > 0 {
			return nil, typeRefusal(ptr, where()+" is an interface with methods: a JSON value cannot fill it")
		}
		d.kind = decAny
	case reflect.Pointer:
		elem, err := w.plan(t.Elem(), ptr, field)
		if err != nil {
			return nil, err
		}
		d.kind, d.elem = decPointer, elem
	case reflect.Slice, reflect.Array:
		if err := w.planList(d, t, ptr, field); err != nil {
			return nil, err
		}
	case reflect.Map:
		if err := w.planMap(d, t, ptr, field, where); err != nil {
			return nil, err
		}
	case reflect.Struct:
		if err := w.planStruct(d, t, ptr); err != nil {
			return nil, err
		}
	default:
		return nil, typeRefusal(ptr, where()+" has no JSON form ("+t.Kind().String()+")")
	}
	return d, nil
}

// jsonKind is the kind of a type that JSON reads as a whole, by its own
// rule rather than by its Go kind: json.Number, time.Time, big.Int,
// json.RawMessage and the types with JSON methods.
func (w *typeWalk) jsonKind(t reflect.Type) (decKind, bool) {
	switch {
	case t == reflect.TypeFor[json.Number]():
		return decNumber, true
	case t == reflect.TypeFor[time.Time]():
		return decTime, true
	case t == reflect.TypeFor[big.Int]():
		return decBigInt, true
	case t == reflect.TypeFor[json.RawMessage]():
		return decRaw, true
	case knownJSON[t] || (t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && hasJSONMethods(t)):
		if !knownJSON[t] {
			w.custom = true
		}
		return decUnmarshal, true
	}
	return 0, false
}

// planList plans a slice or an array: bytes as base64 text, any other
// element as its own plan.
func (w *typeWalk) planList(d *decoder, t reflect.Type, ptr, field string) error {
	if t.Elem().Kind() == reflect.Uint8 && !hasJSONMethods(t.Elem()) {
		if t.Kind() == reflect.Slice {
			// encoding/json writes a byte slice as base64 text.
			w.overrides[t] = &jsonschema.Schema{Type: "string", ContentEncoding: "base64"}
			d.kind = decBytes
			return nil
		}
	}
	elem, err := w.plan(t.Elem(), ptr+"/items", field+"[]")
	if err != nil {
		return err
	}
	d.kind, d.elem = decSlice, elem
	if t.Kind() == reflect.Array {
		d.kind = decArray
	}
	return nil
}

// planMap plans a map, whose keys must be strings.
func (w *typeWalk) planMap(d *decoder, t reflect.Type, ptr, field string, where func() string) error {
	if t.Key().Kind() != reflect.String || hasJSONMethods(t.Key()) {
		return typeRefusal(ptr, where()+" is a map whose keys are not strings: JSON object names are strings")
	}
	elem, err := w.plan(t.Elem(), ptr+"/additionalProperties", field+"[]")
	if err != nil {
		return err
	}
	d.kind, d.elem = decMap, elem
	if t == reflect.TypeFor[map[string]any]() {
		d.kind = decJSONMap
	}
	return nil
}

// planStruct plans the members of a struct as encoding/json selects them
// (jsonFields: by JSON name, through embedded structs), and builds the
// struct's schema for inference.
func (w *typeWalk) planStruct(d *decoder, t reflect.Type, ptr string) error {
	d.kind = decStruct
	d.byName = map[string]int{}
	d.maps = &sync.Pool{}
	typeName := t.Name()
	if typeName == "" {
		typeName = t.String()
	}
	members := jsonFields(t)
	for _, m := range members {
		goName := typeName + "." + m.sf.Name
		at := ijson.AppendToken(ptr+"/properties", m.name)
		if m.stringOpt {
			return typeRefusal(at, "field "+goName+" has the json option \",string\", which no inferred schema describes")
		}
		if w.input && m.viaUnexported {
			return typeRefusal(ptr, "the field "+goName+" is promoted through an embedded pointer to an unexported field, which a decoder cannot allocate")
		}
		fd, err := w.plan(m.sf.Type, at, goName)
		if err != nil {
			return err
		}
		tag, err := readFieldTag(m.sf, fd, goName, at)
		if err != nil {
			return err
		}
		d.byName[m.name] = len(d.fields)
		d.fields = append(d.fields, goField{name: m.name, goName: goName, index: m.index, dec: fd,
			ref: tag.ref, tag: tag, omitEmpty: m.omitEmpty, omitZero: m.omitZero,
			array: m.name == "items" && isPage(t) && fd.kind == decSlice})
	}
	if w.custom {
		return nil // inference refuses the type anyway
	}
	s, err := w.structSchema(d, members, ptr)
	if err != nil {
		return err
	}
	w.overrides[t] = s
	return nil
}

// infer runs jsonschema-go on t and returns the schema in JSON's Go types.
func (w *typeWalk) infer(t reflect.Type) (map[string]any, error) {
	if w.custom {
		return nil, typeRefusal("", "the type "+t.String()+" holds a type with its own JSON methods that jsonschema-go describes by its Go structure: give the schema in the Definition")
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: w.typeSchemas()})
	if err != nil {
		r := typeRefusal("", "jsonschema-go cannot infer a schema from "+t.String())
		r.cause = err
		return nil, r
	}
	text, err := json.Marshal(s)
	if err != nil {
		r := typeRefusal("", "the inferred schema of "+t.String()+" has no JSON form")
		r.cause = err
		return nil, r
	}
	v, err := ijson.Decode(text, 0)
	if err != nil {
		r := typeRefusal("", "the inferred schema of "+t.String()+" is not I-JSON")
		r.cause = err
		return nil, r
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, typeRefusal("", "the inferred schema of "+t.String()+" is not an object")
	}
	return doc, nil
}

// nullMaps lets null through wherever doc, which follows dec's
// structure, describes a Go map below the root: encoding/json writes a
// nil map as null, as it does a nil slice (which jsonschema-go already
// allows), so a zero result must not break its own schema. The root
// stays an object (parameters are one; a nil map result is null, as a
// nil pointer result is), and so does a field encoding/json leaves out
// when nil (omitempty, omitzero). keep is true where null is never
// written.
func nullMaps(doc map[string]any, dec *decoder, keep bool) {
	for dec.kind == decPointer {
		dec = dec.elem
	}
	switch dec.kind {
	case decStruct:
		props, _ := doc["properties"].(map[string]any)
		for _, f := range dec.fields {
			if p, ok := props[f.name].(map[string]any); ok {
				if f.array {
					p["type"] = "array" // written [] when nil
				}
				// omitempty and omitzero leave a nil map out: never null.
				nullMaps(p, f.dec, f.omitEmpty || f.omitZero)
			}
		}
	case decSlice, decArray:
		if items, ok := doc["items"].(map[string]any); ok {
			nullMaps(items, dec.elem, false)
		}
	case decMap, decJSONMap:
		if !keep && doc["type"] == "object" {
			doc["type"] = []any{"null", "object"}
		}
		if ap, ok := doc["additionalProperties"].(map[string]any); ok && dec.elem != nil {
			nullMaps(ap, dec.elem, false)
		}
	}
}

// applyRefs writes the ref keyword of each field tagged actions:"ref=S"
// into the inferred schema doc, which follows dec's structure.
func applyRefs(doc map[string]any, dec *decoder) {
	for dec.kind == decPointer {
		dec = dec.elem
	}
	switch dec.kind {
	case decStruct:
		props, _ := doc["properties"].(map[string]any)
		for _, f := range dec.fields {
			p, ok := props[f.name].(map[string]any)
			if !ok {
				continue
			}
			if f.ref != "" {
				if items, ok := p["items"].(map[string]any); ok {
					items["ref"] = f.ref
				} else {
					p["ref"] = f.ref
				}
			}
			applyRefs(p, f.dec)
		}
	case decSlice, decArray:
		if items, ok := doc["items"].(map[string]any); ok {
			applyRefs(items, dec.elem)
		}
	case decMap:
		if ap, ok := doc["additionalProperties"].(map[string]any); ok {
			applyRefs(ap, dec.elem)
		}
	}
}

// structSchema is the schema of a struct planned by d, built from its
// members (jsonFields) as jsonschema-go builds one from VisibleFields: an
// object without additional properties, a property per member, described
// by its jsonschema tag, required unless omitempty, omitzero or promoted
// through an embedded pointer (a nil one leaves it out). The tags'
// enum and default are written here; refs are written later, for
// parameters only (applyRefs). The schemas of the members' types come
// from jsonschema-go with the structs already built in w.overrides.
func (w *typeWalk) structSchema(d *decoder, members []jsonField, ptr string) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	over := w.typeSchemas()
	for i, m := range members {
		f := &d.fields[i]
		at := ijson.AppendToken(ptr+"/properties", f.name)
		fs, err := jsonschema.ForType(m.sf.Type, &jsonschema.ForOptions{TypeSchemas: over})
		if err != nil {
			r := typeRefusal(at, "jsonschema-go cannot infer a schema for field "+f.goName)
			r.cause = err
			return nil, r
		}
		if desc, ok := m.sf.Tag.Lookup("jsonschema"); ok {
			if desc == "" || wordPrefix.MatchString(desc) {
				return nil, typeRefusal(at, "field "+f.goName+" has a jsonschema tag that is empty or starts with WORD=, which jsonschema-go refuses")
			}
			fs.Description = desc
		}
		if err := f.tag.apply(fs); err != nil {
			return nil, typeRefusal(at, "the tags of field "+f.goName+" have no JSON form")
		}
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		s.Properties[f.name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !m.omitEmpty && !m.omitZero && !m.viaPointer {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// typeSchemas are the schemas jsonschema-go takes for the types whose
// form is not their Go structure: typeSchemas' and the walk's own.
func (w *typeWalk) typeSchemas() map[reflect.Type]*jsonschema.Schema {
	over := typeSchemas()
	for k, v := range w.overrides {
		over[k] = v
	}
	return over
}

// pagePkg is the package path of [Page].
var pagePkg = reflect.TypeFor[Page[int]]().PkgPath()

// isPage reports whether t is an instance of [Page], whose items are
// always a JSON array.
func isPage(t reflect.Type) bool {
	return t.PkgPath() == pagePkg && strings.HasPrefix(t.Name(), "Page[")
}
