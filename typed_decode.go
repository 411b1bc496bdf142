package actions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/actionreg/actions/internal/ijson"
)

// decKind is how a decoder fills its Go value.
type decKind uint8

const (
	decAny       decKind = iota // an interface: the JSON value as it is
	decBool                     // a bool kind
	decString                   // a string kind
	decInt                      // a signed integer kind
	decUint                     // an unsigned integer kind
	decFloat                    // float32 or float64
	decNumber                   // json.Number: the number's text
	decBigInt                   // big.Int: the exact integer
	decTime                     // time.Time: RFC 3339 text
	decBytes                    // a byte slice: base64 text
	decRaw                      // json.RawMessage: canonical JSON text
	decUnmarshal                // a type with its own JSON methods
	decPointer                  // a pointer: allocated when not null
	decSlice                    // a slice
	decArray                    // an array of fixed length
	decMap                      // a map with string keys
	decJSONMap                  // map[string]any: the copy as it is
	decStruct                   // a struct, field by field
)

// decoder is the plan for filling one Go type from the checked copy of
// the parameters (JSON's Go types, numbers as json.Number). It is built
// once, by [Typed], and only read afterwards.
type decoder struct {
	kind   decKind
	t      reflect.Type
	elem   *decoder       // pointer, slice, array and map
	fields []goField      // struct
	byName map[string]int // struct: JSON name → index in fields
	maps   *sync.Pool     // struct: the maps encodeStruct fills, reused
}

// goField is one JSON member of a struct.
type goField struct {
	name   string   // the JSON name
	goName string   // "Type.Field", for messages
	index  []int    // reflect's index path, through embedded structs
	dec    *decoder // the field's type
	ref    string   // the model schema of an actions:"ref=..." tag
	tag    fieldTag // the whole actions tag

	omitEmpty, omitZero bool // the json options, for encoding a result
	// array: a nil slice is written [] and described as an array, never
	// null (the items of a [Page]).
	array bool
}

// decodeState gathers the issues of one decoding, and the path to the
// value being decoded (tokens are kept unescaped until an issue needs
// them).
type decodeState struct {
	path   []pathToken
	issues []Issue
	buf    [8]pathToken // path's first backing array: no growth for shallow values
}

type pathToken struct {
	name  string
	index int // -1 for a name
}

func (st *decodeState) fail(msg string) {
	toks := make([]string, len(st.path))
	for i, p := range st.path {
		if p.index >= 0 {
			toks[i] = strconv.Itoa(p.index)
		} else {
			toks[i] = p.name
		}
	}
	st.issues = append(st.issues, Issue{Path: ijson.Pointer(toks), Keyword: "type", Message: msg})
}

// decode fills dst from v. A value that does not fit adds an issue; the
// rest is still decoded, so that every issue is reported.
func (d *decoder) decode(v any, dst reflect.Value, st *decodeState) {
	if v == nil {
		// encoding/json leaves a value unchanged for null.
		return
	}
	switch d.kind {
	case decAny:
		dst.Set(reflect.ValueOf(v))
	case decBool, decString, decFloat, decNumber:
		d.decodeScalar(v, dst, st)
	case decInt:
		d.decodeInt(v, dst, st)
	case decUint:
		d.decodeUint(v, dst, st)
	case decBigInt, decTime, decBytes, decRaw, decUnmarshal:
		d.decodeEncoded(v, dst, st)
	case decPointer:
		p := reflect.New(d.t.Elem())
		d.elem.decode(v, p.Elem(), st)
		dst.Set(p)
	case decSlice, decArray:
		d.decodeArray(v, dst, st)
	case decJSONMap:
		m, ok := v.(map[string]any)
		if !ok {
			st.fail("must be an object (the Go type map[string]any)")
			return
		}
		dst.Set(reflect.ValueOf(m))
	case decMap:
		d.decodeMap(v, dst, st)
	case decStruct:
		d.decodeStruct(v, dst, st)
	}
}

// decodeScalar fills a boolean, string or floating-point value, or a
// json.Number.
func (d *decoder) decodeScalar(v any, dst reflect.Value, st *decodeState) {
	switch d.kind {
	case decBool:
		b, ok := v.(bool)
		if !ok {
			st.fail("must be a boolean (the Go type " + d.t.String() + ")")
			return
		}
		dst.SetBool(b)
	case decString:
		s, ok := v.(string)
		if !ok {
			st.fail("must be a string (the Go type " + d.t.String() + ")")
			return
		}
		dst.SetString(s)
	case decFloat:
		n, ok := v.(json.Number)
		if !ok {
			st.fail("must be a number (the Go type " + d.t.String() + ")")
			return
		}
		f, err := strconv.ParseFloat(string(n), d.t.Bits())
		if err != nil {
			st.fail(fmt.Sprintf("must be a number within the range of %s", d.t))
			return
		}
		dst.SetFloat(f)
	case decNumber:
		n, ok := v.(json.Number)
		if !ok {
			st.fail("must be a number (the Go type json.Number)")
			return
		}
		dst.SetString(string(n))
	}
}

// decodeEncoded fills a value that JSON carries as text or as raw JSON: a
// big.Int, a time.Time, bytes, a json.RawMessage or a json.Unmarshaler.
func (d *decoder) decodeEncoded(v any, dst reflect.Value, st *decodeState) {
	switch d.kind {
	case decBigInt:
		n, ok := v.(json.Number)
		i, exact := exactInteger(n)
		if !ok || !exact {
			st.fail("must be an integer (the Go type big.Int)")
			return
		}
		dst.Addr().Interface().(*big.Int).Set(i)
	case decTime:
		s, ok := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		if !ok || err != nil {
			st.fail("must be an RFC 3339 date-time (the Go type time.Time)")
			return
		}
		dst.Set(reflect.ValueOf(t))
	case decBytes:
		s, ok := v.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if !ok || err != nil {
			st.fail("must be base64 text (the Go type " + d.t.String() + ")")
			return
		}
		dst.SetBytes(b)
	case decRaw:
		text, err := CanonicalJSON(v)
		if err != nil {
			st.fail("has no JSON form")
			return
		}
		dst.SetBytes(text)
	case decUnmarshal:
		text, err := CanonicalJSON(v)
		if err == nil {
			err = json.Unmarshal(text, dst.Addr().Interface())
		}
		if err != nil {
			st.fail("does not decode into the Go type " + d.t.String())
		}
	}
}

func (d *decoder) decodeInt(v any, dst reflect.Value, st *decodeState) {
	n, ok := v.(json.Number)
	if !ok {
		st.fail("must be an integer (the Go type " + d.t.String() + ")")
		return
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			d.intRange(st)
			return
		}
		// 1e2, 100.0 and -0 are integers JSON writes otherwise.
		b, exact := exactInteger(n)
		if !exact {
			st.fail("must be an integer (the Go type " + d.t.String() + ")")
			return
		}
		if !b.IsInt64() {
			d.intRange(st)
			return
		}
		i = b.Int64()
	}
	if dst.OverflowInt(i) {
		d.intRange(st)
		return
	}
	dst.SetInt(i)
}

func (d *decoder) intRange(st *decodeState) {
	bits := d.t.Bits()
	lo, hi := int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits)
	st.fail(fmt.Sprintf("must be an integer from %d to %d (the Go type %s)", lo, hi, d.t))
}

func (d *decoder) decodeUint(v any, dst reflect.Value, st *decodeState) {
	n, ok := v.(json.Number)
	if !ok {
		st.fail("must be an integer (the Go type " + d.t.String() + ")")
		return
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			d.uintRange(st)
			return
		}
		b, exact := exactInteger(n)
		if !exact {
			st.fail("must be an integer (the Go type " + d.t.String() + ")")
			return
		}
		if !b.IsUint64() {
			d.uintRange(st)
			return
		}
		u = b.Uint64()
	}
	if dst.OverflowUint(u) {
		d.uintRange(st)
		return
	}
	dst.SetUint(u)
}

func (d *decoder) uintRange(st *decodeState) {
	hi := uint64(math.MaxUint64) >> (64 - d.t.Bits())
	st.fail(fmt.Sprintf("must be an integer from 0 to %d (the Go type %s)", hi, d.t))
}

// exactInteger returns the integer n stands for, and false when n is not
// an integer (1.5) or is not a number. Exponents are bounded by I-JSON's
// double range, so the value is never huge.
func exactInteger(n json.Number) (*big.Int, bool) {
	if i, ok := new(big.Int).SetString(string(n), 10); ok {
		return i, true
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() {
		return nil, false
	}
	return r.Num(), true
}

func (d *decoder) decodeArray(v any, dst reflect.Value, st *decodeState) {
	a, ok := v.([]any)
	if !ok {
		st.fail("must be an array (the Go type " + d.t.String() + ")")
		return
	}
	if d.kind == decArray {
		if len(a) != d.t.Len() {
			st.fail(fmt.Sprintf("must have exactly %d items (the Go type %s)", d.t.Len(), d.t))
			return
		}
	} else {
		if d.t == reflect.TypeFor[[]any]() {
			dst.Set(reflect.ValueOf(a))
			return
		}
		dst.Set(reflect.MakeSlice(d.t, len(a), len(a)))
	}
	for i, e := range a {
		st.path = append(st.path, pathToken{index: i})
		d.elem.decode(e, dst.Index(i), st)
		st.path = st.path[:len(st.path)-1]
	}
}

func (d *decoder) decodeMap(v any, dst reflect.Value, st *decodeState) {
	m, ok := v.(map[string]any)
	if !ok {
		st.fail("must be an object (the Go type " + d.t.String() + ")")
		return
	}
	out := reflect.MakeMapWithSize(d.t, len(m))
	kt := d.t.Key()
	for k, e := range m {
		st.path = append(st.path, pathToken{name: k, index: -1})
		ev := reflect.New(d.t.Elem()).Elem()
		d.elem.decode(e, ev, st)
		out.SetMapIndex(reflect.ValueOf(k).Convert(kt), ev)
		st.path = st.path[:len(st.path)-1]
	}
	dst.Set(out)
}

func (d *decoder) decodeStruct(v any, dst reflect.Value, st *decodeState) {
	m, ok := v.(map[string]any)
	if !ok {
		st.fail("must be an object (the Go type " + d.t.String() + ")")
		return
	}
	for i := range d.fields {
		f := &d.fields[i]
		e, present := m[f.name]
		if !present {
			continue
		}
		st.path = append(st.path, pathToken{name: f.name, index: -1})
		f.dec.decode(e, fieldOf(dst, f.index), st)
		st.path = st.path[:len(st.path)-1]
	}
}

// fieldOf returns the field at index, allocating the embedded pointers on
// the way (reflect's FieldByIndex panics on a nil one).
func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// fieldTag is what a field's actions tag says.
type fieldTag struct {
	ref    string
	enum   []any // JSON's Go types: string, bool, json.Number
	def    any
	hasDef bool
	items  bool // enum applies to the items of a slice or array
}
