package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEntryWriterWritesCanonicalLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewEntryWriter(&buf)
	reg := NewRegistry(&Options{OnRecord: w.Write})
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/echo", Parameters: `{"type":"object","properties":{"b":{"default":"\u2028<&>"},"a":{}}}`},
		Run: func(ctx context.Context, p map[string]any, tr *Trace) (any, error) {
			if err := tr.Command(map[string]any{"z": 1, "a": "${now()}"}, map[string]any{"ok": true}); err != nil {
				return nil, err
			}
			if _, err := tr.Call(ctx, "ns/missing", nil); err == nil {
				return nil, errors.New("the nested call should be refused")
			}
			return p, nil
		},
	}))
	var want []store.Record
	for _, p := range []any{map[string]any{"a": 1.5}, []byte(`{"a":"x\ny"}`), []byte(`{"a":`), nil} {
		res, _ := reg.Run(context.Background(), Call{Action: "ns/echo", Params: p})
		want = append(want, res.Records...)
	}
	res, _ := reg.Run(context.Background(), Call{Action: "ns/none"})
	want = append(want, res.Records...)
	require.NoError(t, w.Err())

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(want))
	require.True(t, strings.HasSuffix(buf.String(), "\n"))
	for i, line := range lines {
		var back store.Record
		require.NoError(t, json.Unmarshal([]byte(line), &back), line)
		again, err := CanonicalJSON(back)
		require.NoError(t, err)
		assert.Equal(t, line, string(again), "line %d is canonical and round-trips", i)
		orig, err := CanonicalJSON(want[i])
		require.NoError(t, err)
		assert.Equal(t, string(orig), line, "line %d is the record Run returned", i)
		checkRunEntryShape(t, back.Entry)
	}
	assert.Contains(t, lines[0], `"command":{"a":"${now()}","z":1}`)
	assert.Contains(t, lines[0], "\u2028<&>", "no HTML escaping, U+2028 as it is")
}

type failingEntryWriter struct{ writes int }

func (f *failingEntryWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errors.New("disk full")
}

func TestEntryWriterStopsAfterAnError(t *testing.T) {
	fw := &failingEntryWriter{}
	w := NewEntryWriter(fw)
	w.Write(store.Record{Entry: store.RunEntry{Action: "ns/a", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}})
	w.Write(store.Record{Entry: store.RunEntry{Action: "ns/b", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}})
	assert.EqualError(t, w.Err(), "disk full")
	assert.Equal(t, 1, fw.writes, "nothing is written after the first error")
}

func TestEntryWriterConcurrentLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	w := NewEntryWriter(&buf)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w.Write(store.Record{Entry: store.RunEntry{Action: fmt.Sprintf("g%d/a%d", g, i), Parameters: `{"pad":"` + strings.Repeat("x", 200) + `"}`, Steps: []store.RunStep{}, Outcome: store.OutcomeDone}})
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Err())
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 400)
	for _, l := range lines {
		var rec store.Record
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
	}
}

func TestRunLogEntriesIsACopy(t *testing.T) {
	log := NewRunLog()
	assert.Empty(t, entriesOf(log.Records()))
	log.add(store.Record{Entry: store.RunEntry{Action: "ns/a", Parameters: "{}", Outcome: store.OutcomeDone, Steps: []store.RunStep{
		{Command: json.RawMessage(`{"op":"x"}`), Result: "1"},
		{Call: &store.RunEntry{Action: "ns/b", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}},
	}}})
	log.add(store.Record{Entry: store.RunEntry{Action: "ns/c", Parameters: "{}", Outcome: store.OutcomeRefused, Error: "internal", Steps: []store.RunStep{}}})

	got := entriesOf(log.Records())
	require.Len(t, got, 2)
	assert.Equal(t, "ns/a", got[0].Action)
	assert.Equal(t, "ns/c", got[1].Action, "in the order recorded")

	// Changing the copy, at any depth, leaves the log as it was.
	got[0].Action = "changed"
	got[0].Steps[0].Result = "changed"
	got[0].Steps[0].Command[2] = 'X'
	got[0].Steps[1].Call.Action = "changed"
	_ = append(got[:1], store.RunEntry{Action: "appended"})

	again := entriesOf(log.Records())
	require.Len(t, again, 2)
	assert.Equal(t, "ns/a", again[0].Action)
	assert.Equal(t, "1", again[0].Steps[0].Result)
	assert.Equal(t, `{"op":"x"}`, string(again[0].Steps[0].Command))
	assert.Equal(t, "ns/b", again[0].Steps[1].Call.Action)
	assert.Equal(t, "ns/c", again[1].Action)

	// Nor does changing the entry given to Record.
	given := store.RunEntry{Action: "ns/e", Parameters: "{}", Outcome: store.OutcomeDone, Steps: []store.RunStep{{Command: json.RawMessage(`{"op":"y"}`)}}}
	log.add(store.Record{Entry: given})
	given.Steps[0].Command[2] = 'Z'
	assert.Equal(t, `{"op":"y"}`, string(entriesOf(log.Records())[2].Steps[0].Command))

	// Recording after a read does not change the copy already taken.
	log.add(store.Record{Entry: store.RunEntry{Action: "ns/d", Parameters: "{}", Outcome: store.OutcomeDone, Steps: []store.RunStep{}}})
	assert.Len(t, again, 2)
	assert.Len(t, entriesOf(log.Records()), 4)
}

func TestRunLogConcurrentRecord(t *testing.T) {
	log := NewRunLog()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				log.add(store.Record{Entry: store.RunEntry{Action: "ns/a", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}})
				_ = entriesOf(log.Records())
			}
		}()
	}
	wg.Wait()
	assert.Len(t, entriesOf(log.Records()), 800)
}

// call3 runs one call of id through reg as the host itself (no caller)
// and returns its result, entry and error, the three values most tests
// look at.
func call3(reg *Registry, ctx context.Context, id string, params any) (any, store.RunEntry, error) {
	res, err := reg.Run(ctx, Call{Action: id, Params: params})
	return res.Value, res.Entry(), err
}

// callAs is call3 as caller c.
func callAs(reg *Registry, ctx context.Context, c *identity.Caller, id string, params any) (any, store.RunEntry, error) {
	res, err := reg.Run(ctx, Call{Action: id, Params: params, Caller: c})
	return res.Value, res.Entry(), err
}

// batch3 runs b through reg as caller c (nil: the host) and returns its
// result, the entries of the calls made and its error.
func batch3(reg *Registry, ctx context.Context, b Batch, c *identity.Caller) (any, []store.RunEntry, error) {
	res, err := reg.Run(ctx, Call{Batch: &b, Caller: c})
	return res.Value, entriesOf(res.Records), err
}

// entriesOf is the entries of records, in order.
func entriesOf(recs []store.Record) []store.RunEntry {
	out := make([]store.RunEntry, 0, len(recs)) // sized: the batch benchmark's harness should not grow with the batch
	for _, r := range recs {
		out = append(out, r.Entry)
	}
	return out
}

// confirm3 confirms the pending change id as caller c.
func confirm3(reg *Registry, ctx context.Context, id string, c *identity.Caller) (any, store.RunEntry, error) {
	res, err := reg.Decide(ctx, Decision{Change: id, Confirm: true, Caller: onUI(c)})
	return res.Value, res.Entry(), err
}

// reject rejects the pending change id as caller c.
func reject(reg *Registry, ctx context.Context, id string, c *identity.Caller) error {
	_, err := reg.Decide(ctx, Decision{Change: id, Caller: onUI(c)})
	return err
}

// onUI is c as the host's own screen sees the same person: where a
// decision comes from by default. Nil stays nil.
func onUI(c *identity.Caller) *identity.Caller {
	if c == nil {
		return nil
	}
	cp := cloneCaller(c)
	cp.Surface = identity.SurfaceUI
	return &cp
}

// paramsOf is the compiled parameters schema of the action id, for tests.
func (r *Registry) paramsOf(id string) *ParameterSchema {
	reg, ok := r.lookup(id)
	if !ok {
		return nil
	}
	return reg.params
}
