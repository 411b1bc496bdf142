package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// batchFixture is one file of testdata/batches; README.md there describes
// the format.
type batchFixture struct {
	Description string `json:"description"`
	Limits      struct {
		MaxBatchCalls        int `json:"max_batch_calls"`
		MaxPlaceholderLength int `json:"max_placeholder_length"`
		MaxPlaceholders      int `json:"max_placeholders"`
	} `json:"limits"`
	Actions   []batchAction   `json:"actions"`
	Batch     json.RawMessage `json:"batch"`
	BatchText *string         `json:"batch_text"`
	GoForm    *bool           `json:"go_form"`
	Expect    struct {
		Entries []json.RawMessage `json:"entries"`
		Result  json.RawMessage   `json:"result"`
		Error   *struct {
			Code   string `json:"code"`
			Step   *int   `json:"step"`
			Issues []struct {
				Path    string `json:"path"`
				Keyword string `json:"keyword"`
			} `json:"issues"`
		} `json:"error"`
		Runs *[]string `json:"runs"`
	} `json:"expect"`
}

type batchAction struct {
	ID         string          `json:"id"`
	Parameters json.RawMessage `json:"parameters"`
	Returns    json.RawMessage `json:"returns"`
	Fails      string          `json:"fails"`
}

func (f *batchFixture) text() []byte {
	if f.BatchText != nil {
		return []byte(*f.BatchText)
	}
	return f.Batch
}

// batchRun is what one run of a fixture gave.
type batchRun struct {
	result  any
	entries []store.RunEntry
	seen    []store.RunEntry // what Options.OnRecord received
	runs    []string         // the bodies that ran, in order
	err     error
}

// batchRegistry registers the fixture's actions; their bodies append
// their id to *runs.
func batchRegistry(t testing.TB, f *batchFixture, runs *[]string, seen *[]store.RunEntry) *Registry {
	t.Helper()
	reg := NewRegistry(&Options{Limits: Limits{
		MaxBatchCalls:        f.Limits.MaxBatchCalls,
		MaxPlaceholderLength: f.Limits.MaxPlaceholderLength,
		MaxPlaceholders:      f.Limits.MaxPlaceholders,
	}, OnRecord: func(rec store.Record) { *seen = append(*seen, rec.Entry) }})
	for _, a := range f.Actions {
		params := a.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		require.NoError(t, reg.Register(Action{
			Definition: Definition{ID: a.ID, Parameters: params},
			Run:        batchBody(a, runs),
		}), "action %s", a.ID)
	}
	return reg
}

func batchBody(a batchAction, runs *[]string) Body {
	return func(_ context.Context, params map[string]any, _ *Trace) (any, error) {
		*runs = append(*runs, a.ID)
		switch {
		case a.Fails != "":
			return nil, NewRefusal(codes.Code(a.Fails), "refused by the fixture")
		case string(a.Returns) == `"$params"`:
			return params, nil
		case len(a.Returns) == 0:
			return nil, nil
		}
		return ijson.Decode(a.Returns, 0) // a fresh value on every call
	}
}

func loadBatchFixtures(t *testing.T) map[string]*batchFixture {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "batches", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(names), 32, "fixtures in testdata/batches")
	out := map[string]*batchFixture{}
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		var f batchFixture
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&f), name)
		require.True(t, (f.BatchText != nil) != (len(f.Batch) > 0), "%s: give batch or batch_text", name)
		out[strings.TrimSuffix(filepath.Base(name), ".json")] = &f
	}
	return out
}

// TestBatchFixtures runs every fixture from its JSON text, through
// DecodeBatchLimits then RunBatch; unless the fixture says go_form: false,
// it also runs the same batch read leniently by encoding/json into a Batch
// built in Go, which must give the same outcome.
func TestBatchFixtures(t *testing.T) {
	for name, f := range loadBatchFixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("json", func(t *testing.T) {
				var run batchRun
				reg := batchRegistry(t, f, &run.runs, &run.seen)
				b, err := reg.DecodeBatch(f.text())
				if err == nil {
					run.exec(reg, b)
				} else {
					run.err = err
				}
				checkBatchRun(t, f, &run)
			})
			if f.GoForm != nil && !*f.GoForm {
				return
			}
			t.Run("go", func(t *testing.T) {
				var plain struct {
					Commands []Step `json:"commands"`
					Result   string `json:"result"`
				}
				dec := json.NewDecoder(bytes.NewReader(f.text()))
				dec.UseNumber()
				dec.DisallowUnknownFields()
				require.NoError(t, dec.Decode(&plain), "the batch has no Go form: mark the fixture go_form: false")
				var run batchRun
				reg := batchRegistry(t, f, &run.runs, &run.seen)
				run.exec(reg, Batch{Steps: plain.Commands, Result: plain.Result})
				checkBatchRun(t, f, &run)
			})
		})
	}
}

func (run *batchRun) exec(reg *Registry, b Batch) {
	run.result, run.entries, run.err = batch3(reg, context.Background(), b, nil)
}

func checkBatchRun(t *testing.T, f *batchFixture, run *batchRun) {
	t.Helper()
	want := f.Expect
	require.NotNil(t, want.Entries, "expect.entries is required")
	require.Len(t, run.entries, len(want.Entries), "entries")
	for i, e := range want.Entries {
		assert.Equal(t, batchCanonical(t, e), batchCanonical(t, run.entries[i]), "entry %d", i)
	}
	require.Len(t, run.seen, len(run.entries), "OnRecord sees every entry")
	for i := range run.seen {
		assert.Equal(t, batchCanonical(t, run.entries[i]), batchCanonical(t, run.seen[i]), "OnEntry %d", i)
	}
	if want.Runs != nil {
		assert.Equal(t, *want.Runs, append([]string{}, run.runs...), "bodies run")
	}
	if want.Error != nil {
		require.Error(t, run.err)
		var r *Refusal
		require.ErrorAs(t, run.err, &r)
		assert.Equal(t, want.Error.Code, string(r.Code), "code; error: %v", run.err)
		var se *StepError
		if errors.As(run.err, &se) {
			require.NotNil(t, want.Error.Step, "a refused step: expect.error.step is its index; error: %v", run.err)
			assert.Equal(t, *want.Error.Step, se.Index, "step")
			assert.Equal(t, fmt.Sprintf("/commands/%d", se.Index), se.Pointer())
		} else {
			assert.Nil(t, want.Error.Step, "the batch was refused before any call; error: %v", run.err)
		}
		var got []string
		for _, is := range r.Issues {
			got = append(got, is.Path+" "+is.Keyword)
		}
		var exp []string
		for _, is := range want.Error.Issues {
			exp = append(exp, is.Path+" "+is.Keyword)
		}
		assert.Equal(t, exp, got, "issues (path keyword); error: %v", run.err)
		assert.Nil(t, run.result, "no result with an error")
		return
	}
	require.NoError(t, run.err)
	wantResult := want.Result
	if len(wantResult) == 0 {
		wantResult = json.RawMessage("null")
	}
	assert.Equal(t, batchCanonical(t, wantResult), batchCanonical(t, run.result), "result")
}

func batchCanonical(t testing.TB, v any) string {
	t.Helper()
	text, err := CanonicalJSON(v)
	require.NoError(t, err)
	return string(text)
}

// batchEchoRegistry registers actions that return their parameters, under the
// ids the fixtures use, plus the ids given.
func batchEchoRegistry(t testing.TB, opts *Options) *Registry {
	t.Helper()
	reg := NewRegistry(opts)
	for _, id := range []string{"t/echo", "t/source", "t/none", "t/reserve", "t/count", "t/other",
		"scflow/create_actor", "carbon/update_actor_emissions"} {
		require.NoError(t, reg.Register(Action{
			Definition: Definition{ID: id, Parameters: json.RawMessage(`{"type":"object"}`)},
			Run: func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
				return p, nil
			},
		}))
	}
	return reg
}

func TestRunBatchTypedResults(t *testing.T) {
	type actor struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
		Skip string   `json:"-"`
	}
	reg := batchEchoRegistry(t, nil)
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "t/actor"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			return actor{ID: "a1", Tags: []string{"x", "y"}, Skip: "hidden"}, nil
		},
	}))
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "t/names"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			return []string{"n0", "n1"}, nil
		},
	}))
	b := Batch{Steps: []Step{
		{Call: "t/actor", As: "a"},
		{Call: "t/names", As: "n"},
		{Call: "t/echo", With: map[string]any{
			"id": "${a.id}", "tag": "${a.tags.1}", "skip": "${a.Skip}", "names": "${n}", "first": "${n.0}", "text": "${a.tags}",
		}},
	}}
	result, entries, err := batch3(reg, context.Background(), b, nil)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	assert.Equal(t, `{"first":"n0","id":"a1","names":["n0","n1"],"tag":"y","text":["x","y"]}`, entries[2].Parameters)
	assert.Equal(t, entries[2].Parameters, batchCanonical(t, result))
}

func TestRunBatchGoValuesInWith(t *testing.T) {
	reg := batchEchoRegistry(t, nil)
	b := Batch{Steps: []Step{
		{Call: "t/echo", With: map[string]any{"id": "x1"}, As: "a"},
		{Call: "t/echo", With: map[string]any{"ids": []string{"${a.id}", "y"}, "n": 3, "f": 1.5}},
	}}
	_, entries, err := batch3(reg, context.Background(), b, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"f":1.5,"ids":["x1","y"],"n":3}`, entries[1].Parameters)

	b.Steps[1].With = map[string]any{"bad": make(chan int)}
	_, entries, err = batch3(reg, context.Background(), b, nil)
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, codes.InvalidScriptStep, r.Code)
	assert.Equal(t, "/commands/1/with/bad", r.Issues[0].Path)
	assert.Empty(t, entries, "no call runs")
}

func TestRunBatchDoesNotChangeBatch(t *testing.T) {
	reg := batchEchoRegistry(t, nil)
	b := Batch{Steps: []Step{
		{Call: "t/echo", With: map[string]any{"list": []any{"a", map[string]any{"k": "v"}}}, As: "a"},
		{Call: "t/echo", With: map[string]any{"x": "${a.list}", "y": []any{"${a.missing}", "${a.list.1}"}}, As: "b"},
	}, Result: "${b}"}
	before := batchCanonical(t, b)
	result, _, err := batch3(reg, context.Background(), b, nil)
	require.NoError(t, err)
	assert.Equal(t, before, batchCanonical(t, b))
	// The result is a copy: changing it changes nothing else.
	result.(map[string]any)["x"] = "changed"
	result2, _, err := batch3(reg, context.Background(), b, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"x":["a",{"k":"v"}],"y":[{"k":"v"}]}`, batchCanonical(t, result2))
}

func TestRunBatchKeepsResultsUntilLastRead(t *testing.T) {
	reg := batchEchoRegistry(t, nil)
	b := Batch{Steps: []Step{
		{Call: "t/echo", With: map[string]any{"v": "a"}, As: "a"},
		{Call: "t/echo", With: map[string]any{"x": "${a.v}"}, As: "b"},
		{Call: "t/echo", With: map[string]any{"y": "${b.x}"}, As: "unread"},
		{Call: "t/echo", With: map[string]any{"z": "${a.v}${b.x}"}, As: "c"},
		{Call: "t/echo", With: map[string]any{}},
	}, Result: "${c.z}"}
	plan, err := checkBatch(b, reg.Limits(), nil)
	require.NoError(t, err)
	var keep []bool
	var drops [][]int32
	for _, st := range plan.steps {
		keep = append(keep, st.keep)
		drops = append(drops, st.drop)
	}
	assert.Equal(t, []bool{true, true, false, true, false}, keep)
	assert.Equal(t, [][]int32{{}, {}, {}, {0, 1}, {}}, drops)

	result, entries, err := batch3(reg, context.Background(), b, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"z":"aa"}`, entries[3].Parameters)
	assert.Equal(t, "aa", result)
}

func TestRunBatchConcurrent(t *testing.T) {
	reg := batchEchoRegistry(t, nil)
	b, err := decodeBatch([]byte(`{"commands": [{"call": "t/echo", "with": {"n": 1, "l": [1, 2]}, "as": "a"},
		{"call": "t/echo", "with": {"m": "${a.l}", "t": "n=${a.n}"}, "as": "b"}], "result": "${b}"}`), Limits{})
	require.NoError(t, err)
	done := make(chan string)
	for range 8 {
		go func() {
			result, _, err := batch3(reg, context.Background(), b, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			text, _ := CanonicalJSON(result)
			done <- string(text)
		}()
	}
	for range 8 {
		assert.Equal(t, `{"m":[1,2],"t":"n=1"}`, <-done)
	}
}

func TestRunBatchContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(nil)
	var runs int
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "t/stop"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			runs++
			cancel()
			return "ok", nil
		},
	}))
	b := Batch{Steps: []Step{{Call: "t/stop"}, {Call: "t/stop"}, {Call: "t/stop"}}}
	res, err := reg.Run(ctx, Call{Batch: &b})
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, codes.Cancelled)
	assert.Equal(t, 1, runs)
	require.Len(t, res.Records, 1)
	assert.True(t, res.Records[0].RolledBack, "a stopped batch is undone, and its record says so")
	entries := entriesOf(res.Records)

	_, entries, err = batch3(reg, ctx, b, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, entries, "a done context stops the batch before its first call")
}

func TestRunBatchTooDeepAtRunTime(t *testing.T) {
	reg := batchEchoRegistry(t, &Options{Limits: Limits{MaxParamDepth: 4}})
	b := Batch{Steps: []Step{
		{Call: "t/echo", With: map[string]any{"a": map[string]any{"b": map[string]any{}}}, As: "s"},
		{Call: "t/echo", With: map[string]any{"x": map[string]any{"y": "${s}"}}},
	}}
	_, entries, err := batch3(reg, context.Background(), b, nil)
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, codes.InvalidScriptStep, r.Code)
	assert.Equal(t, "/commands/1/with/x/y", r.Issues[0].Path)
	assert.Len(t, entries, 1, "the step whose value nests too deep is not called")
}

// Limits come from the registry on every path: the
// registry's DecodeBatch and RunBatch use its MaxBatchCalls, and
// json.Unmarshal, which knows no registry, bounds no count.
func TestDecodeBatchUsesTheRegistrysLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"commands":[`)
	for i := range defaultLimits.MaxBatchCalls + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"call":"t/echo"}`)
	}
	b.WriteString(`]}`)
	_, err := batchEchoRegistry(t, nil).DecodeBatch([]byte(b.String()))
	require.ErrorIs(t, err, codes.InvalidScriptStep)
	reg := batchEchoRegistry(t, &Options{Limits: Limits{MaxBatchCalls: 2 * defaultLimits.MaxBatchCalls}})
	batch, err := reg.DecodeBatch([]byte(b.String()))
	require.NoError(t, err)
	assert.Len(t, batch.Steps, defaultLimits.MaxBatchCalls+1)
	var viaJSON Batch
	require.NoError(t, json.Unmarshal([]byte(b.String()), &viaJSON), "json.Unmarshal bounds no count")
	_, entries, err := batch3(reg, context.Background(), viaJSON, nil)
	require.NoError(t, err, "the registry allows this many steps")
	assert.Len(t, entries, defaultLimits.MaxBatchCalls+1)
	_, _, err = batch3(batchEchoRegistry(t, nil), context.Background(), viaJSON, nil)
	require.ErrorIs(t, err, codes.InvalidScriptStep, "a registry with the default limit refuses it before any call")
}

func TestBatchUnmarshalJSON(t *testing.T) {
	var b Batch
	require.NoError(t, json.Unmarshal([]byte(`{"commands":[{"call":"t/echo","with":{"n":1},"as":"a"}],"result":"${a}"}`), &b))
	assert.Equal(t, Batch{Steps: []Step{{Call: "t/echo", With: map[string]any{"n": json.Number("1")}, As: "a"}}, Result: "${a}"}, b)
	err := json.Unmarshal([]byte(`{"commands":[{"call":"t/echo","when":"x"}]}`), &b)
	require.ErrorIs(t, err, codes.InvalidScriptStep)
	err = json.Unmarshal([]byte(`{"commands":[],"commands":[]}`), &b)
	require.ErrorIs(t, err, codes.InvalidScriptStep)
}

func TestBatchRefusalListsAtMost100(t *testing.T) {
	reg := batchEchoRegistry(t, nil)
	with := map[string]any{}
	for i := range 150 {
		with["p"+strconv.Itoa(i)] = "${ghost.id}"
	}
	bad := make([]Step, 150)
	for i := range bad {
		bad[i] = Step{Call: "t/echo", As: "not-an-identifier"}
	}
	for name, b := range map[string]Batch{
		"unknown references": {Steps: []Step{{Call: "t/echo", With: with}}},
		"malformed as":       {Steps: bad},
	} {
		_, entries, err := batch3(reg, context.Background(), b, nil)
		var r *Refusal
		require.ErrorAs(t, err, &r, name)
		assert.Len(t, r.Issues, 100, name)
		assert.Contains(t, r.Message, "first 100", name)
		assert.Empty(t, entries, name)
	}
}

// TestBatchRefusalsHoldNoValue: messages name keys, pointers, limits and
// as names only, never a value of with.
func TestBatchRefusalsHoldNoValue(t *testing.T) {
	for _, text := range []string{
		`{"commands":[{"call":"t/echo","with":{"p":"SECRET ${SECRET_x"}}, {"call":"t/echo","with":{"p":"${nope.SECRET}"}}]}`,
		`{"commands":[{"call":"t/echo","with":{"p":"SECRET"},"as":"SECRET-1"}]}`,
		`{"commands":[{"call":"t/echo","with":{"p":"SECRET","p":"SECRET"}}]}`,
		`{"commands":[{"call":"t/echo","with":{"p":"${x.SECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRETSECRET}"}}]}`,
	} {
		_, err := decodeBatch([]byte(text), Limits{})
		require.Error(t, err, text)
		var r *Refusal
		require.ErrorAs(t, err, &r)
		for _, is := range r.Issues {
			assert.NotContains(t, is.Message, "SECRET", text)
		}
		assert.NotContains(t, r.Message, "SECRET", text)
	}
}

// FuzzDecodeBatch: DecodeBatch never panics; a batch it accepts runs on a
// registry of echo actions without panicking, its check never refuses what
// DecodeBatch accepted, and it survives a round trip through
// encoding/json. Seeds: testdata/fuzz/FuzzDecodeBatch, the fixtures'
// batches.
func FuzzDecodeBatch(f *testing.F) {
	reg := batchEchoRegistry(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data, Limits{})
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || (r.Code != codes.InvalidScriptStep && r.Code != codes.UnknownReference) {
				t.Fatalf("refusal %v", err)
			}
			if len(r.Issues) == 0 {
				t.Fatal("a refusal without issues")
			}
			return
		}
		_, entries, err := batch3(reg, context.Background(), b, nil)
		if err == nil && len(entries) != len(b.Steps) {
			t.Fatalf("%d entries for %d steps", len(entries), len(b.Steps))
		}
		if (errors.Is(err, codes.InvalidScriptStep) || errors.Is(err, codes.UnknownReference)) && len(entries) == 0 {
			t.Fatalf("RunBatch's check refused what DecodeBatch accepted: %v", err)
		}
		text, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := decodeBatch(text, Limits{})
		if err != nil {
			t.Fatalf("the batch written back is refused: %v", err)
		}
		if batchText(t, b) != batchText(t, b2) {
			t.Fatalf("round trip changed the batch")
		}
	})
}

// batchText is a batch's canonical JSON with a nil with written as {}.
func batchText(t testing.TB, b Batch) string {
	steps := make([]any, len(b.Steps))
	for i, s := range b.Steps {
		w := s.With
		if w == nil {
			w = map[string]any{}
		}
		steps[i] = map[string]any{"call": s.Call, "with": w, "as": s.As}
	}
	return batchCanonical(t, map[string]any{"commands": steps, "result": b.Result})
}

var updateBatchSeeds = flag.Bool("update-batch-seeds", false, "write the fixtures' batches to testdata/fuzz/FuzzDecodeBatch")

// TestFuzzDecodeBatchSeeds keeps the seed corpus in step with the
// fixtures: every fixture's batch is a seed (the file has the fixture's
// name). With -update-batch-seeds it writes them.
func TestFuzzDecodeBatchSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeBatch")
	if *updateBatchSeeds {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, f := range loadBatchFixtures(t) {
			seed := "go test fuzz v1\n[]byte(" + strconv.Quote(string(f.text())) + ")\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(seed), 0o644))
		}
	}
	seeds := map[string]bool{}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		lines := strings.SplitN(string(data), "\n", 3)
		require.GreaterOrEqual(t, len(lines), 2, n)
		require.Equal(t, "go test fuzz v1", lines[0], n)
		arg := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		s, err := strconv.Unquote(arg)
		require.NoError(t, err, n)
		seeds[s] = true
	}
	for name, f := range loadBatchFixtures(t) {
		assert.True(t, seeds[string(f.text())], "fixture %s has no seed; run go test -run TestFuzzDecodeBatchSeeds -update-batch-seeds", name)
	}
}

// BenchmarkRunBatch runs chains of calls in which every step reads the
// previous step's result through a placeholder. ns/call should not grow
// with the length of the batch.
func BenchmarkRunBatch(b *testing.B) {
	reg := NewRegistry(&Options{Limits: Limits{MaxBatchCalls: 10000}})
	err := reg.Register(Action{
		Definition: Definition{ID: "bench/step", Parameters: json.RawMessage(
			`{"type":"object","properties":{"n":{"type":"integer"},"prev":{"type":"integer"}},"required":["n"]}`)},
		Run: func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
			return map[string]any{"n": p["n"]}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, calls := range []int{10, 1000, 10000} {
		// The batch comes from JSON text, as a host receives it.
		text, err := json.Marshal(chainBatch(calls))
		if err != nil {
			b.Fatal(err)
		}
		batch, err := reg.DecodeBatch(text)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, _, err := batch3(reg, ctx, batch, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(calls), "ns/call")
		})
		// The peer: the same calls through Registry.Run, parameters built
		// beforehand, entries kept. What the batch adds is the difference;
		// what grows with the length of both is the cost of a larger heap.
		params := make([]map[string]any, calls)
		for i := range params {
			params[i] = map[string]any{"n": json.Number(strconv.Itoa(i))}
			if i > 0 {
				params[i]["prev"] = json.Number(strconv.Itoa(i - 1))
			}
		}
		b.Run(fmt.Sprintf("run-loop/calls=%d", calls), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				entries := make([]store.RunEntry, 0, calls)
				for _, p := range params {
					_, e, err := call3(reg, ctx, "bench/step", p)
					if err != nil {
						b.Fatal(err)
					}
					entries = append(entries, e)
				}
				benchEntries = entries
			}
			// Let the heap shrink again, so that the benchmarks that
			// follow do not mark these entries in every cycle.
			benchEntries = nil
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(calls), "ns/call")
		})
	}
}

// chainBatch builds n steps, each naming its result and reading the
// previous one's.
func chainBatch(n int) Batch {
	b := Batch{Steps: make([]Step, n)}
	for i := range n {
		with := map[string]any{"n": i}
		if i > 0 {
			with["prev"] = "${s" + strconv.Itoa(i-1) + ".n}"
		}
		b.Steps[i] = Step{Call: "bench/step", With: with, As: "s" + strconv.Itoa(i)}
	}
	return b
}

// BenchmarkBatchScopeValue compares the two ways of turning a body's result
// into the JSON value later placeholders walk: reading back the entry's
// canonical text (what RunBatch does) or copying the Go value.
func BenchmarkBatchScopeValue(b *testing.B) {
	type row struct {
		ID    string   `json:"id"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	results := map[string]any{
		"small map": map[string]any{"n": json.Number("12"), "id": "actor-7"},
		"map":       map[string]any{"id": "actor-7", "name": "Plant", "co2": json.Number("12.5"), "tags": []any{"a", "b", "c"}, "geo": map[string]any{"lat": json.Number("1.5"), "lng": json.Number("2.5")}},
		"struct":    row{ID: "actor-7", Count: 3, Tags: []string{"a", "b", "c"}},
	}
	for name, v := range results {
		text, err := CanonicalJSON(v)
		if err != nil {
			b.Fatal(err)
		}
		entry := store.RunEntry{Result: string(text)}
		b.Run(name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := scopeValue(entry); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/copy", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := copyParamsValue(v, canonicalMaxDepth); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchEntries keeps the entries of the last run loop alive, as a batch's
// caller would.
var benchEntries []store.RunEntry
