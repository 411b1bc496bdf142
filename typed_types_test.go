package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"time"
)

// The Go types the fixtures of testdata/typed name. Each is registered in
// goTypes under the name the fixtures use.

type tOrder struct {
	Name     string            `json:"name" jsonschema:"the order's name"`
	Owner    string            `json:"owner" actions:"ref=actor"`
	Count    int8              `json:"count,omitempty"`
	Due      time.Time         `json:"due,omitzero"`
	Total    *big.Int          `json:"total,omitempty"`
	Tags     []string          `json:"tags,omitempty"`
	Via      []string          `json:"via,omitempty" actions:"ref=site"`
	Blob     []byte            `json:"blob,omitempty"`
	Discount *float64          `json:"discount,omitempty"`
	Notes    map[string]string `json:"notes,omitempty"`
	internal int
}

type tNumbers struct {
	I8  int8        `json:"i8,omitempty"`
	I64 int64       `json:"i64,omitempty"`
	U8  uint8       `json:"u8,omitempty"`
	U64 uint64      `json:"u64,omitempty"`
	F32 float32     `json:"f32,omitempty"`
	F64 float64     `json:"f64,omitempty"`
	N   json.Number `json:"n,omitempty"`
	B   *big.Int    `json:"b,omitempty"`
	BV  big.Int     `json:"bv,omitzero"`
}

// tNums is tNumbers without the big.Int held by value, which
// encoding/json writes as {} when the value is not addressable, where the
// typed encoding writes its number.
type tNums struct {
	I8  int8        `json:"i8,omitempty"`
	I64 int64       `json:"i64,omitempty"`
	U8  uint8       `json:"u8,omitempty"`
	U64 uint64      `json:"u64,omitempty"`
	F32 float32     `json:"f32,omitempty"`
	F64 float64     `json:"f64,omitempty"`
	N   json.Number `json:"n,omitempty"`
	B   *big.Int    `json:"b,omitempty"`
}

type tSub struct {
	X int `json:"x"`
}

type tOptional struct {
	S  *string           `json:"s,omitempty"`
	P  *tSub             `json:"p,omitempty"`
	L  []int             `json:"l,omitempty"`
	M  map[string]string `json:"m,omitempty"`
	A  any               `json:"a,omitempty"`
	AR [2]int            `json:"ar,omitzero"`
	T  *time.Time        `json:"t,omitempty"`
	R  json.RawMessage   `json:"r,omitempty"`
}

type TBase struct {
	ID string `json:"id"`
}

type TExtra struct {
	Note string `json:"note,omitempty"`
}

type tEmbedded struct {
	TBase
	*TExtra
	Own string `json:"own,omitempty"`
}

type tPlain struct {
	Untagged string
	Skipped  string `json:"-"`
	Dash     string `json:"-,"`
}

type tNode struct {
	Name string `json:"name"`
	Next *tNode `json:"next,omitempty"`
}

type tChan struct {
	C chan int `json:"c"`
}

type tFunc struct {
	F func() `json:"f"`
}

type tComplex struct {
	Z complex128 `json:"z"`
}

type tStringer struct {
	S fmt.Stringer `json:"s"`
}

type tIntKeys struct {
	M map[int]string `json:"m"`
}

type tStringOpt struct {
	N int `json:"n,string"`
}

type tTaggedEmbed struct {
	TBase `json:"base"`
}

type tDuplicate struct {
	A string `json:"X"`
	X string
}

// tCustom writes itself as a string, which jsonschema-go cannot know.
type tCustom struct{ v string }

func (c tCustom) MarshalJSON() ([]byte, error)  { return json.Marshal(c.v) }
func (c *tCustom) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &c.v) }

type tWithCustom struct {
	C tCustom `json:"c"`
}

type tRefInt struct {
	N int `json:"n" actions:"ref=actor"`
}

type tRefs struct {
	Owner string   `json:"owner" actions:"ref=actor"`
	Sites []string `json:"sites,omitempty" actions:"ref=site"`
}

type tNested struct {
	P *tSub          `json:"p"`
	M map[string]int `json:"m,omitempty"`
}

type tWhen struct {
	At time.Time `json:"at"`
}

type tArr struct {
	AR [2]int `json:"ar"`
}

type tBadTag struct {
	X string `json:"x" actions:"reference=actor"`
}

type tResult struct {
	Key   string   `json:"key"`
	Lines int      `json:"lines"`
	Tags  []string `json:"tags"`
}

type tEmpty struct{}

// tMaps holds maps encoding/json writes as null when nil, at a field, in a slice and in a map.
type tMaps struct {
	Tags  map[string]string            `json:"tags"`
	Sets  []map[string]int             `json:"sets"`
	Inner map[string]map[string]string `json:"inner"`
}

// goType is what a fixture can do with a Go type T: use it as the
// parameters (with a body that reports the value it got) or as the result
// (with a body that returns a given value).
type goType struct {
	params func(def Definition, got *any) Action
	result func(def Definition, ret func() (any, error)) Action
	zero   func() any // T's zero value
	newPtr func() any // for a pointer T, a pointer to a zero value
	decode func(text []byte) (any, error)
}

func typeFor[T any]() goType {
	return goType{
		params: func(def Definition, got *any) Action {
			return Typed(def, func(_ context.Context, p T, _ *Trace) (struct{}, error) {
				*got = dumpGo(reflect.ValueOf(&p).Elem())
				return struct{}{}, nil
			})
		},
		result: func(def Definition, ret func() (any, error)) Action {
			return Typed(def, func(context.Context, map[string]any, *Trace) (T, error) {
				v, err := ret()
				if err != nil {
					var z T
					return z, err
				}
				return v.(T), nil
			})
		},
		zero: func() any { var z T; return z },
		newPtr: func() any {
			t := reflect.TypeFor[T]()
			if t.Kind() != reflect.Pointer {
				return nil
			}
			return reflect.New(t.Elem()).Interface()
		},
		decode: func(text []byte) (any, error) {
			var v T
			err := json.Unmarshal(text, &v)
			return v, err
		},
	}
}

var goTypes = map[string]goType{
	"tOrder":         typeFor[tOrder](),
	"*tOrder":        typeFor[*tOrder](),
	"tNumbers":       typeFor[tNumbers](),
	"tNums":          typeFor[tNums](),
	"tOptional":      typeFor[tOptional](),
	"tEmbedded":      typeFor[tEmbedded](),
	"tPlain":         typeFor[tPlain](),
	"map[string]any": typeFor[map[string]any](),
	"map[string]int": typeFor[map[string]int](),
	"tNode":          typeFor[tNode](),
	"tChan":          typeFor[tChan](),
	"tFunc":          typeFor[tFunc](),
	"tComplex":       typeFor[tComplex](),
	"tStringer":      typeFor[tStringer](),
	"tIntKeys":       typeFor[tIntKeys](),
	"tStringOpt":     typeFor[tStringOpt](),
	"tTaggedEmbed":   typeFor[tTaggedEmbed](),
	"tDuplicate":     typeFor[tDuplicate](),
	"tWithCustom":    typeFor[tWithCustom](),
	"tRefInt":        typeFor[tRefInt](),
	"tResult":        typeFor[tResult](),
	"tRefs":          typeFor[tRefs](),
	"tNested":        typeFor[tNested](),
	"tWhen":          typeFor[tWhen](),
	"tArr":           typeFor[tArr](),
	"tBadTag":        typeFor[tBadTag](),
	"*tResult":       typeFor[*tResult](),
	"tEmpty":         typeFor[tEmpty](),
	"tMaps":          typeFor[tMaps](),
	"tEmbedPtr":      typeFor[tEmbedPtr](),
	"tShadow":        typeFor[tShadow](),
	"tTwoX":          typeFor[tTwoX](),
	"tHidden":        typeFor[tHidden](),
	"tDropped":       typeFor[tDropped](),
	"tSkipEmbed":     typeFor[tSkipEmbed](),
	"tEmbedLow":      typeFor[tEmbedLow](),
	"tEmbedCode":     typeFor[tEmbedCode](),
	"tEnums":         typeFor[tEnums](),
	"tBadDefault":    typeFor[tBadDefault](),
	"tBadEnum":       typeFor[tBadEnum](),
	"tBadBool":       typeFor[tBadBool](),
	"tEnumStruct":    typeFor[tEnumStruct](),
	"tDupKey":        typeFor[tDupKey](),
	"tDefaultOut":    typeFor[tDefaultOut](),
	"[]string":       typeFor[[]string](),
	"int":            typeFor[int](),
	"string":         typeFor[string](),
	"any":            typeFor[any](),
}

// dumpGo renders a Go value for the fixtures, so that the type of each
// part shows: a scalar as "type:value", a pointer as {"*": value} or nil,
// a struct as an object of its Go field names (unexported ones left
// out), a slice as an array or nil, a map as an object.
func dumpGo(v reflect.Value) any {
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		return "time.Time:" + v.Interface().(time.Time).Format(time.RFC3339Nano)
	case reflect.TypeFor[big.Int]():
		b := v.Interface().(big.Int)
		return "big.Int:" + b.String()
	case reflect.TypeFor[json.RawMessage]():
		if v.IsNil() {
			return nil
		}
		return "json.RawMessage:" + string(v.Bytes())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return map[string]any{"*": dumpGo(v.Elem())}
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return map[string]any{"any": dumpJSONValue(v.Elem().Interface())}
	case reflect.Struct:
		m := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				m[t.Field(i).Name] = dumpGo(v.Field(i))
			}
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Type().String() + ":" + string(v.Bytes())
		}
		fallthrough
	case reflect.Array:
		a := make([]any, v.Len())
		for i := range a {
			a[i] = dumpGo(v.Index(i))
		}
		return a
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if v.Type() == reflect.TypeFor[map[string]any]() {
			return map[string]any{"map[string]any": dumpJSONValue(v.Interface())}
		}
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[k.String()] = dumpGo(v.MapIndex(k))
		}
		return m
	}
	return fmt.Sprintf("%s:%v", v.Type(), v.Interface())
}

// dumpJSONValue renders a value in JSON's Go types, numbers marked as
// json.Number.
func dumpJSONValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		return "json.Number:" + string(x)
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = dumpJSONValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = dumpJSONValue(e)
		}
		return a
	}
	return v
}

// goTypeNames lists the registered names, for a fixture naming none.
func goTypeNames() string {
	names := make([]string, 0, len(goTypes))
	for n := range goTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// TMeta is embedded by pointer in tEmbedPtr: its
// fields are required in TMeta, optional once promoted through a pointer
// that may be nil.
type TMeta struct {
	Owner string `json:"owner"`
	Rev   int    `json:"rev"`
}

type tEmbedPtr struct {
	*TMeta
	Name string `json:"name"`
}

// The field selection of encoding/json, by JSON name.

type TInner struct {
	E1 string `json:"e1"`
}

// tShadow: the outer E1 hides the inner one by Go name only; their JSON
// names differ, so encoding/json writes both.
type tShadow struct {
	TInner
	E1 string `json:"e1x"`
}

type TXA struct {
	X string `json:"a"`
}

type TXB struct {
	X string `json:"b"`
}

// tTwoX: two promoted fields X, ambiguous by Go name, distinct by JSON
// name.
type tTwoX struct {
	TXA
	TXB
}

type TFoo struct {
	Foo int `json:"e1"`
}

// tHidden: the outer field wins the JSON name e1 by depth.
type tHidden struct {
	TFoo
	E1 string `json:"e1"`
}

type TC1 struct{ ID string }

type TC2 struct{ ID string }

// tDropped: two untagged ID at one depth: encoding/json drops the name.
type tDropped struct {
	TC1
	TC2
	Own string `json:"own"`
}

// TCode is embedded as a non-struct: encoding/json makes it a member
// named by its type.
type TCode string

type tEmbedCode struct {
	TCode
	N int `json:"n"`
}

// tLow is unexported: embedded by pointer in tEmbedLow, it cannot be
// allocated by a decoder (encoding/json refuses it too), but a result
// holding one is written.
type tLow struct {
	Z string `json:"z"`
}

type tEmbedLow struct {
	*tLow
	N int `json:"n"`
}

type tSkipEmbed struct {
	TBase `json:"-"`
	Own   string `json:"own"`
}

// Enums and defaults on the type.
type tEnums struct {
	Site  string   `json:"site,omitempty" jsonschema:"the site" actions:"enum=plant|depot,default=plant"`
	Level int8     `json:"level,omitempty" actions:"enum=1|2|3,default=2"`
	Ratio *float64 `json:"ratio,omitempty" actions:"default=0.5"`
	On    bool     `json:"on,omitempty" actions:"default=true"`
	Owner string   `json:"owner,omitempty" actions:"ref=actor,default=me"`
	Kinds []string `json:"kinds,omitempty" actions:"enum=a|b"`
}

type tBadDefault struct {
	N int8 `json:"n,omitempty" actions:"default=300"`
}

type tBadEnum struct {
	N uint `json:"n,omitempty" actions:"enum=1|-1"`
}

type tBadBool struct {
	B bool `json:"b,omitempty" actions:"default=yes"`
}

type tEnumStruct struct {
	S tSub `json:"s" actions:"enum=x"`
}

type tDupKey struct {
	S string `json:"s" actions:"enum=a,enum=b"`
}

type tDefaultOut struct {
	S string `json:"s,omitempty" actions:"enum=a|b,default=c"`
}
