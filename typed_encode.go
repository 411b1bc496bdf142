package actions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/actionreg/actions/internal/ijson"
)

// The encoding of a typed result into JSON's Go types, for its output
// check: what encoding/json would write, read back (numbers as int64,
// uint64, float64 or json.Number), without writing text. A part with its own JSON methods
// (MarshalJSON, MarshalText) goes through encoding/json itself.

var errNoJSONForm = errors.New("actions: the value has no JSON form")

// encodeResult returns result, a value of the type planned by d, in
// JSON's Go types.
func (d *decoder) encodeResult(result any) (any, error) {
	if result == nil {
		return nil, nil
	}
	v := reflect.ValueOf(result)
	if v.Type() != d.t {
		// An interface R holding another type: encode it generically.
		c, err := copyValue(result, canonicalMaxDepth)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return d.encode(v, 0)
}

func (d *decoder) encode(v reflect.Value, depth int) (any, error) {
	if depth > canonicalMaxDepth {
		return nil, errNoJSONForm
	}
	switch d.kind {
	case decBool, decString, decInt, decUint, decFloat, decNumber, decBigInt, decTime, decBytes:
		return d.encodeScalar(v)
	case decPointer:
		if v.IsNil() {
			return nil, nil
		}
		return d.elem.encode(v.Elem(), depth+1)
	case decSlice:
		if v.IsNil() {
			return nil, nil
		}
		return d.encodeArray(v, depth)
	case decArray:
		return d.encodeArray(v, depth)
	case decMap, decJSONMap:
		if v.IsNil() {
			return nil, nil
		}
		return d.encodeMap(v, depth)
	case decStruct:
		return d.encodeStruct(v, depth)
	}
	// any, json.RawMessage and the types with JSON methods: what
	// encoding/json writes for them.
	if v.Kind() == reflect.Interface && v.IsNil() {
		return nil, nil
	}
	c, err := copyValue(v.Interface(), canonicalMaxDepth-depth)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// encodeScalar writes a value that has no members: a boolean, string,
// number, big.Int, time.Time or bytes.
func (d *decoder) encodeScalar(v reflect.Value) (any, error) {
	switch d.kind {
	case decBool:
		return v.Bool(), nil
	case decString:
		s := v.String()
		if !utf8.ValidString(s) {
			return nil, errNoJSONForm
		}
		return s, nil
	// Numbers stay Go numbers, which the engine and the canonical writer
	// read exactly (an int64 or uint64 below 256 is boxed without an
	// allocation); a float32 becomes the text encoding/json writes for it,
	// so that 0.1 is judged as 0.1, not as its float64 widening.
	case decInt:
		return v.Int(), nil
	case decUint:
		return v.Uint(), nil
	case decFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errNoJSONForm
		}
		if d.t.Bits() == 32 {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 32)), nil
		}
		return f, nil
	case decNumber:
		s := v.String()
		if s == "" {
			// encoding/json writes an empty json.Number as 0.
			return json.Number("0"), nil
		}
		if !ijson.ValidNumber(s) {
			return nil, errNoJSONForm
		}
		return json.Number(s), nil
	case decBigInt:
		b := v.Interface().(big.Int) // a value: v may not be addressable
		return json.Number(b.String()), nil
	case decTime:
		t := v.Interface().(time.Time)
		if y := t.Year(); y < 0 || y > 9999 {
			return nil, errNoJSONForm // encoding/json refuses it too
		}
		return t.Format(time.RFC3339Nano), nil
	case decBytes:
		if v.IsNil() {
			return nil, nil
		}
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	}
	return nil, errNoJSONForm
}

func (d *decoder) encodeArray(v reflect.Value, depth int) (any, error) {
	out := make([]any, v.Len())
	for i := range out {
		e, err := d.elem.encode(v.Index(i), depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (d *decoder) encodeMap(v reflect.Value, depth int) (any, error) {
	out := make(map[string]any, v.Len())
	it := v.MapRange()
	for it.Next() {
		k := it.Key().String()
		if !utf8.ValidString(k) {
			return nil, errNoJSONForm
		}
		e, err := d.elem.encode(it.Value(), depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = e
	}
	return out, nil
}

func (d *decoder) encodeStruct(v reflect.Value, depth int) (any, error) {
	out, _ := d.maps.Get().(map[string]any)
	if out == nil {
		out = make(map[string]any, len(d.fields))
	}
	for i := range d.fields {
		f := &d.fields[i]
		fv, ok := fieldIfSet(v, f.index)
		if !ok {
			continue // behind a nil embedded pointer: encoding/json skips it
		}
		if (f.omitEmpty && isEmptyValue(fv)) || (f.omitZero && isZeroValue(fv)) {
			continue
		}
		if f.array && fv.IsNil() {
			out[f.name] = []any{}
			continue
		}
		e, err := f.dec.encode(fv, depth+1)
		if err != nil {
			return nil, err
		}
		out[f.name] = e
	}
	return out, nil
}

// releaseResult hands the maps encodeResult made for a struct back to
// their plan, once nothing refers to the encoded value any more (its
// canonical text is written). Maps of other origins are left alone.
func (d *decoder) releaseResult(v any) {
	if v == nil {
		return
	}
	d.release(v, 0)
}

func (d *decoder) release(v any, depth int) {
	if v == nil || depth > canonicalMaxDepth {
		return
	}
	switch d.kind {
	case decPointer:
		d.elem.release(v, depth+1)
	case decSlice, decArray:
		if a, ok := v.([]any); ok {
			for _, e := range a {
				d.elem.release(e, depth+1)
			}
		}
	case decMap:
		if m, ok := v.(map[string]any); ok {
			for _, e := range m {
				d.elem.release(e, depth+1)
			}
		}
	case decStruct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for i := range d.fields {
			if e, ok := m[d.fields[i].name]; ok {
				d.fields[i].dec.release(e, depth+1)
			}
		}
		clear(m)
		d.maps.Put(m)
	}
}

// fieldIfSet returns the field at index, and false when an embedded
// pointer on the way is nil.
func fieldIfSet(v reflect.Value, index []int) (reflect.Value, bool) {
	if len(index) == 1 {
		return v.Field(index[0]), true
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmptyValue is encoding/json's rule for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZeroValue is encoding/json's rule for omitzero: an IsZero method when
// the type has one, the zero value otherwise.
func isZeroValue(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	if v.CanAddr() {
		if z, ok := v.Addr().Interface().(interface{ IsZero() bool }); ok {
			return z.IsZero()
		}
	}
	return v.IsZero()
}
