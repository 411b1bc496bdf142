package actions

import (
	"encoding/json"
	"fmt"
	"testing"
)

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
