package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/actionreg/actions/store"
	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// typicalSchema is the typical action of the benchmarks: eight properties,
// two defaults, one ref and an array of objects.
const typicalSchema = `{
  "type": "object",
  "required": ["name", "owner", "lines"],
  "additionalProperties": false,
  "properties": {
    "name":     {"type": "string", "minLength": 1, "maxLength": 200},
    "owner":    {"type": "string", "ref": "actor"},
    "kind":     {"type": "string", "enum": ["plant", "depot", "store"], "default": "plant"},
    "priority": {"type": "integer", "minimum": 0, "maximum": 9, "default": 3},
    "email":    {"type": "string", "format": "email"},
    "active":   {"type": "boolean"},
    "tags":     {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "lines":    {"type": "array", "minItems": 1, "items": {
      "type": "object", "required": ["sku", "qty"], "additionalProperties": false,
      "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "number", "exclusiveMinimum": 0}}
    }}
  }
}`

const typicalParams = `{"name":"North plant","owner":"Usine Nord","email":"ops@example.org","active":true,
 "tags":["north","eu"],"lines":[{"sku":"ABC-0001","qty":12},{"sku":"XYZ-0420","qty":0.5},{"sku":"QQQ-9999","qty":3}]}`

// typicalResolver is an in-memory model lookup, as a host would give.
func typicalResolver(_ context.Context, _, value string) (RefMatches, error) {
	if value == "Usine Nord" {
		return RefMatches{Names: []string{"actor:17"}}, nil
	}
	return RefMatches{}, nil
}

func typicalMap(b *testing.B) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(typicalParams), &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkValidateParameters compares the registry's check of one call
// (copy, defaults, validation, one ref) with the bare jsonschema v6
// Validate of the same compiled schema, and with google/jsonschema-go's
// ApplyDefaults+Validate (the MCP Go SDK's per-call input check).
// actions/check+texts+body adds to the check what else BenchmarkRun
// must do whatever its call path costs: the entry's canonical texts of
// the parameters and the result, and the body.
func BenchmarkValidateParameters(b *testing.B) {
	ctx := context.Background()
	ps, err := CompileParameters(typicalSchema, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	params := typicalMap(b)
	b.Run("actions/map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ps.Check(ctx, params, typicalResolver); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("actions/text", func(b *testing.B) {
		text := json.RawMessage(typicalParams)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ps.Check(ctx, text, typicalResolver); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("actions/check+texts+body", func(b *testing.B) {
		// What Run must do by its promises, without its call path: the
		// check, the entry's two canonical texts and the typical body.
		b.ReportAllocs()
		for b.Loop() {
			checked, err := ps.Check(ctx, params, typicalResolver)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := exactText(checked); err != nil {
				b.Fatal(err)
			}
			res, _ := typicalBody(ctx, checked, nil)
			if _, err := exactText(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema-v6/validate", func(b *testing.B) {
		// The same compiled schema, on params that already hold their
		// defaults and JSON's number type: validation alone.
		v, err := ps.copyParams(params)
		if err != nil {
			b.Fatal(err)
		}
		ps.plan.Fill(v, 0)
		b.ReportAllocs()
		for b.Loop() {
			if err := ps.sch.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("google-jsonschema-go/map", func(b *testing.B) {
		rs := googleResolved(b)
		b.ReportAllocs()
		for b.Loop() {
			m := copyMap(params) // ApplyDefaults writes into its argument
			if err := rs.ApplyDefaults(&m); err != nil {
				b.Fatal(err)
			}
			if err := rs.Validate(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("google-jsonschema-go/text", func(b *testing.B) {
		rs := googleResolved(b)
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal([]byte(typicalParams), &m); err != nil {
				b.Fatal(err)
			}
			if err := rs.ApplyDefaults(&m); err != nil {
				b.Fatal(err)
			}
			if err := rs.Validate(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func googleResolved(b *testing.B) *googleschema.Resolved {
	var s googleschema.Schema
	if err := json.Unmarshal([]byte(typicalSchema), &s); err != nil {
		b.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	return rs
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyAny(v)
	}
	return out
}

func copyAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = copyAny(e)
		}
		return a
	}
	return v
}

// typicalRegistry is a registry of the typical action, with the typical
// resolver and an OnRecord that keeps nothing, so that memory stays flat
// over b.N calls (a RunLog would grow with b.N and weigh on the
// collector), and the typical call of it.
func typicalRegistry(b *testing.B) (*Registry, Call) {
	reg := NewRegistry(&Options{Resolve: typicalResolver, OnRecord: func(store.Record) {}})
	err := reg.Register(Action{
		Definition: Definition{ID: "supply/create_site", Parameters: typicalSchema},
		Run:        typicalBody,
	})
	if err != nil {
		b.Fatal(err)
	}
	return reg, Call{Action: "supply/create_site", Params: typicalMap(b)}
}

// typicalBody is the body of the typical action.
func typicalBody(_ context.Context, p map[string]any, _ *Trace) (any, error) {
	return map[string]any{"id": "site:1", "owner": p["owner"], "lines": len(p["lines"].([]any))}, nil
}

// BenchmarkRun measures one call end to end: check, body, entry in
// canonical JSON, the record handed to OnRecord. Compare with
// BenchmarkValidateParameters/jsonschema-v6/validate.
func BenchmarkRun(b *testing.B) {
	reg, call := typicalRegistry(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Run(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunParallel runs the same call from every P; run it with
// -cpu 1,2 to see how calls scale.
func BenchmarkRunParallel(b *testing.B) {
	reg, call := typicalRegistry(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := reg.Run(ctx, call); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRegister compares registering 1,000 actions with compiling
// their schemas with bare jsonschema v6.
func BenchmarkRegister(b *testing.B) {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = "bench/action_" + itoa3(i)
	}
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	b.Run("actions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			reg := NewRegistry(nil)
			for _, id := range ids {
				if err := reg.Register(Action{Definition: Definition{ID: id, Parameters: typicalSchema}, Run: body}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("jsonschema-v6/compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// A host keeps what it compiles, as a registry does.
			kept := make(map[string]*jsonschema.Schema, len(ids))
			for _, id := range ids {
				doc, err := jsonschema.UnmarshalJSON(stringsReader(typicalSchema))
				if err != nil {
					b.Fatal(err)
				}
				c := jsonschema.NewCompiler()
				if err := c.AddResource("https://x.invalid/s.json", doc); err != nil {
					b.Fatal(err)
				}
				sch, err := c.Compile("https://x.invalid/s.json")
				if err != nil {
					b.Fatal(err)
				}
				kept[id] = sch
			}
		}
	})
}

func itoa3(i int) string {
	return string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// BenchmarkRunText is BenchmarkRun with the parameters as JSON text, the
// form an MCP client sends.
func BenchmarkRunText(b *testing.B) {
	reg, call := typicalRegistry(b)
	ctx := context.Background()
	call.Params = json.RawMessage(typicalParams)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Run(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSmall is the parameters of one call: eight members, mixed types.
func benchSmall() map[string]any {
	return map[string]any{
		"id":       "ticket-4711",
		"title":    "Printer on floor 3 is jammed",
		"priority": json.Number("2"),
		"assignee": nil,
		"urgent":   true,
		"tags":     []any{"hardware", "printer"},
		"estimate": 1.5,
		"note":     "Ça coince 🙃",
	}
}

// benchNested is a result of about 1 KB, as a body might return it.
func benchNested() map[string]any {
	items := make([]any, 3)
	for i := range items {
		items[i] = map[string]any{
			"id":     i,
			"name":   fmt.Sprintf("item number %d", i),
			"price":  float64(10+i) + 0.25,
			"ratio":  1 / float64(i+3),
			"active": i%2 == 0,
			"owner": map[string]any{
				"name":  "Zoë \"Z\" Åberg",
				"email": fmt.Sprintf("zoe%d@example.org", i),
				"roles": []any{"reader", "writer"},
			},
			"history": []any{map[string]any{
				"at": fmt.Sprintf("2024-05-0%dT10:00:00Z", i+1), "by": "system", "change": "created\nline two",
			}},
		}
	}
	return map[string]any{"status": "ok", "count": json.Number("3"), "items": items, "next": nil}
}

// benchLarge is an array of n objects; 1,000 make about 100 KB.
func benchLarge(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{
			"seq":    i,
			"key":    fmt.Sprintf("k-%06d", i*7919),
			"value":  float64(i) * 0.37,
			"ok":     i%3 == 0,
			"labels": []any{"a", "bé"},
			"meta":   map[string]any{"x": json.Number(fmt.Sprint(-i)), "y": fmt.Sprintf("%d e", i)},
		}
	}
	return out
}

func benchValues() []struct {
	name string
	v    any
} {
	return []struct {
		name string
		v    any
	}{
		{"small", benchSmall()},
		{"1k", benchNested()},
		{"100k", benchLarge(1000)},
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	for _, c := range benchValues() {
		out, err := CanonicalJSON(c.v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := CanonicalJSON(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshal is the peer: encoding/json.Marshal of the same values
// (it sorts map keys too, by bytes).
func BenchmarkMarshal(b *testing.B) {
	for _, c := range benchValues() {
		out, err := json.Marshal(c.v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTools exports 1,000 registered actions as MCP tools; compare
// its allocations with its "output" sub-benchmark, which only copies the
// schemas the tools must hold.
func BenchmarkTools(b *testing.B) {
	reg := NewRegistry(nil)
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for i := range 1000 {
		if err := reg.Register(Action{Definition: Definition{ID: "bench/action_" + itoa3(i), Title: "Action", Parameters: typicalSchema}, Run: body}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("actions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Tools(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("output", func(b *testing.B) {
		// The floor: one Tool per action holding its own copy of the schema.
		var docs []map[string]any
		for _, a := range reg.Definitions() {
			ps := reg.paramsOf(a.ID)
			docs = append(docs, ps.schema())
		}
		b.ReportAllocs()
		for b.Loop() {
			out := make([]Tool, 0, len(docs))
			for i, d := range docs {
				out = append(out, Tool{Name: "bench-action_" + itoa3(i), Title: "Action", InputSchema: schemaCopy(d)})
			}
			benchTools = out
		}
	})
}

func schemaCopy(m map[string]any) map[string]any {
	return copyAny(m).(map[string]any)
}

// BenchmarkValidateParallel is the bare jsonschema v6 Validate under
// RunParallel: the scaling floor BenchmarkRunParallel is measured against.
func BenchmarkValidateParallel(b *testing.B) {
	ps, err := CompileParameters(typicalSchema, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	v, err := ps.copyParams(typicalMap(b))
	if err != nil {
		b.Fatal(err)
	}
	ps.plan.Fill(v, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := ps.sch.Validate(v); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchTools keeps the floor's output alive, as Tools' caller would.
var benchTools []Tool

// BenchmarkMachineParallel measures the machine rather than the library:
// run with -cpu 1,2, it says how far two Ps can scale here at all, for a
// loop that only computes and for one that allocates small maps (the
// collector's work on a small heap, as in BenchmarkRunParallel).
func BenchmarkMachineParallel(b *testing.B) {
	b.Run("compute", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			x := uint64(1)
			for pb.Next() {
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			machineSink.Add(x)
		})
	})
	b.Run("allocate", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := 0
			for pb.Next() {
				m := make(map[string]any, 8)
				for i := range 8 {
					m[keys8[i]] = []any{i}
				}
				n += len(m)
			}
			machineSink.Add(uint64(n))
		})
	})
}

var (
	machineSink atomic.Uint64
	keys8       = [8]string{"a", "b", "c", "d", "e", "f", "g", "h"}
)

// typicalTyped is the typical action's parameters as a Go type: the same
// schema is given, so both actions check the same things; the typed one
// then decodes into this struct.
type typicalTyped struct {
	Name     string   `json:"name"`
	Owner    string   `json:"owner" actions:"ref=actor"`
	Kind     string   `json:"kind,omitempty"`
	Priority int      `json:"priority,omitempty"`
	Email    string   `json:"email,omitempty"`
	Active   bool     `json:"active,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Lines    []struct {
		SKU string  `json:"sku"`
		Qty float64 `json:"qty"`
	} `json:"lines"`
}

// typicalResult is the typical body's result as a Go type.
type typicalResult struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	Lines int    `json:"lines"`
}

// BenchmarkRunTyped compares, on the typical call, an untyped action with
// typed ones on the same schema and parameters: typed/no-contract returns
// any (no output schema), so the difference is the decoding into the Go
// type; typed/contract has the output schema inferred from its result
// type, compared with untyped/contract, the untyped action given the
// same output schema.
func BenchmarkRunTyped(b *testing.B) {
	ctx := context.Background()
	params := typicalMap(b)
	untyped := func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
		return map[string]any{"id": "site:1", "owner": p["owner"], "lines": len(p["lines"].([]any))}, nil
	}
	outSchema, _, err := inferOutput(reflect.TypeFor[typicalResult]())
	if err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry(&Options{Resolve: typicalResolver, OnRecord: func(store.Record) {}})
	reg.MustRegister(
		Action{Definition: Definition{ID: "u/plain", Parameters: typicalSchema}, Run: untyped},
		Action{Definition: Definition{ID: "u/contract", Parameters: typicalSchema, OutputSchema: outSchema}, Run: untyped},
		Typed(Definition{ID: "t/plain", Parameters: typicalSchema}, func(_ context.Context, p typicalTyped, _ *Trace) (any, error) {
			return typicalResult{ID: "site:1", Owner: p.Owner, Lines: len(p.Lines)}, nil
		}),
		Typed(Definition{ID: "t/contract", Parameters: typicalSchema}, func(_ context.Context, p typicalTyped, _ *Trace) (typicalResult, error) {
			return typicalResult{ID: "site:1", Owner: p.Owner, Lines: len(p.Lines)}, nil
		}),
	)
	for _, c := range []struct{ name, id string }{
		{"untyped/no-contract", "u/plain"},
		{"typed/no-contract", "t/plain"},
		{"untyped/contract", "u/contract"},
		{"typed/contract", "t/contract"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Run(ctx, Call{Action: c.id, Params: params}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOutputCheck compares the registry's check of a typed result
// against its inferred output schema (the result made JSON values, then
// validated) with the bare jsonschema v6 Validate of the same result
// already in JSON values, and with what a host would write to check a Go
// value with v6 alone (json.Marshal, jsonschema.UnmarshalJSON, Validate).
func BenchmarkOutputCheck(b *testing.B) {
	doc, plan, err := inferOutput(reflect.TypeFor[typicalResult]())
	if err != nil {
		b.Fatal(err)
	}
	ps, err := compileOutput(doc, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	result := typicalResult{ID: "site:1", Owner: "actor:17", Lines: 3}
	value, err := resultValue(result)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("actions/typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := ps.checkOutput(result, plan.encodeResult)
			if err != nil {
				b.Fatal(err)
			}
			plan.releaseResult(v) // as Run does once the entry is written
		}
	})
	b.Run("actions/map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ps.checkOutput(value, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema-v6/validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := ps.sch.Validate(value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonschema-v6/marshal+validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, err := json.Marshal(result)
			if err != nil {
				b.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
			if err != nil {
				b.Fatal(err)
			}
			if err := ps.sch.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRegisterScale registers n typical actions, one Register call
// each as a host's start-up does, then lists their tools (Tools), for n
// from 100 to 10,000: the time per action ("ns/action") should not grow
// with n. Beside it, "B/action" is the heap still held per action once
// the registry is built (measured once, after a collection), against the
// same for bare jsonschema v6: the same schema text decoded and compiled
// n times, the schemas kept in a map by id.
func BenchmarkRegisterScale(b *testing.B) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for _, n := range []int{100, 1000, 10000} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "bench/action_" + strconv.Itoa(i)
		}
		b.Run("actions/n="+strconv.Itoa(n), func(b *testing.B) {
			build := func() *Registry {
				reg := NewRegistry(nil)
				for _, id := range ids {
					if err := reg.Register(Action{Definition: Definition{ID: id, Parameters: typicalSchema}, Run: body}); err != nil {
						b.Fatal(err)
					}
				}
				return reg
			}
			held := heldPer(n, func() any { return build() })
			b.ReportAllocs()
			for b.Loop() {
				tools, err := build().Tools(nil)
				if err != nil || len(tools) != n {
					b.Fatal(err, len(tools))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/action")
			b.ReportMetric(held, "B/action")
		})
		b.Run("jsonschema-v6/n="+strconv.Itoa(n), func(b *testing.B) {
			build := func() map[string]*jsonschema.Schema {
				kept := make(map[string]*jsonschema.Schema, len(ids))
				for _, id := range ids {
					doc, err := jsonschema.UnmarshalJSON(stringsReader(typicalSchema))
					if err != nil {
						b.Fatal(err)
					}
					c := jsonschema.NewCompiler()
					if err := c.AddResource("https://x.invalid/s.json", doc); err != nil {
						b.Fatal(err)
					}
					sch, err := c.Compile("https://x.invalid/s.json")
					if err != nil {
						b.Fatal(err)
					}
					kept[id] = sch
				}
				return kept
			}
			held := heldPer(n, func() any { return build() })
			b.ReportAllocs()
			for b.Loop() {
				build()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/action")
			b.ReportMetric(held, "B/action")
		})
	}
}

// heldPer returns the heap that what build returns holds, per one of its
// n parts: the live heap after a collection, with it and without it.
func heldPer(n int, build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}
