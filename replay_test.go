package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// The format of testdata/replays/*.json is described in
// testdata/replays/README.md.

type replayScenario struct {
	Description   string          `json:"description"`
	Host          *runHost        `json:"host"`
	Actions       []runAction     `json:"actions"`
	Call          *runCall        `json:"call"`
	Entry         json.RawMessage `json:"entry"`
	ReplayHost    *runHost        `json:"replay_host"`
	ReplayActions []runAction     `json:"replay_actions"`
	Expect        replayExpect    `json:"expect"`
}

type replayExpect struct {
	Divergence  *replayDivergence `json:"divergence"`
	UnwrapsCode codes.Code        `json:"unwraps_code"`
	Entry       json.RawMessage   `json:"entry"`
	BodyRuns    map[string]int64  `json:"body_runs"`
}

type replayDivergence struct {
	Path string `json:"path"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

func TestReplayFixtures(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "replays", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(names), 20, "fixtures in testdata/replays")
	sort.Strings(names)
	for _, n := range names {
		t.Run(strings.TrimSuffix(filepath.Base(n), ".json"), func(t *testing.T) {
			b, err := os.ReadFile(n)
			require.NoError(t, err)
			var f replayScenario
			require.NoError(t, runStrictDecode(b, &f))
			require.NotEmpty(t, f.Description, "a fixture says what it shows")
			require.NotNil(t, f.Expect.Entry, "every fixture expects the replayed entry")
			checkReplay(t, f)
		})
	}
}

// replayRegistry registers a fixture's actions with script bodies.
func replayRegistry(t *testing.T, s *runScripts, actions []runAction, opts *Options) *Registry {
	reg := NewRegistry(opts)
	for _, a := range actions {
		require.NoError(t, reg.Register(Action{Definition: a.Definition, Run: s.body(t, a.Definition.ID, a.Script)}))
	}
	return reg
}

func checkReplay(t *testing.T, f replayScenario) {
	ctx := context.Background()
	var onRecord atomic.Int64
	opts := &Options{OnRecord: func(store.Record) { onRecord.Add(1) }}
	if f.Host != nil {
		opts.Resolve = f.Host.resolver()
	}
	recording := &runScripts{runs: map[string]*atomic.Int64{}}
	reg := replayRegistry(t, recording, f.Actions, opts)

	// The recorded entry: a call made now and written to a log, or one
	// given as it was read from a log; either way it is read back from
	// its JSON form, as a host replays its log.
	var recorded store.Record
	if f.Call != nil {
		require.Nil(t, f.Entry, "call and entry exclude each other")
		var params any
		if f.Call.Params != nil {
			params = runExact(t, f.Call.Params)
		}
		res, _ := reg.Run(ctx, Call{Action: f.Call.ID, Params: params})
		var log bytes.Buffer
		w := NewEntryWriter(&log)
		w.Write(res.Records[0])
		require.NoError(t, w.Err())
		require.NoError(t, json.Unmarshal(log.Bytes(), &recorded))
	} else {
		require.NotNil(t, f.Entry, "a fixture makes a call or gives an entry")
		require.NoError(t, json.Unmarshal(f.Entry, &recorded.Entry))
	}
	before := onRecord.Load()

	replaying := &runScripts{runs: map[string]*atomic.Int64{}}
	rreg := reg
	ropts := &Options{OnRecord: opts.OnRecord, Resolve: opts.Resolve}
	if f.ReplayHost != nil {
		ropts.Resolve = f.ReplayHost.resolver()
	}
	switch {
	case f.ReplayActions != nil:
		rreg = replayRegistry(t, replaying, f.ReplayActions, ropts)
	case f.ReplayHost != nil:
		replaying = recording
		rreg = replayRegistry(t, replaying, f.Actions, ropts)
	default:
		replaying = recording
		for _, n := range recording.runs {
			n.Store(0)
		}
	}

	got, err := rreg.Replay(ctx, recorded)

	assert.Equal(t, before, onRecord.Load(), "a replay does not call OnRecord")
	text, cerr := CanonicalJSON(got)
	require.NoError(t, cerr)
	assert.Equal(t, runCanonical(t, f.Expect.Entry), string(text), "replayed entry")
	checkRunEntryShape(t, got)

	if f.Expect.Divergence == nil {
		require.NoError(t, err)
		require.Empty(t, f.Expect.UnwrapsCode, "a match unwraps nothing")
	} else {
		var d *Divergence
		require.ErrorAs(t, err, &d)
		assert.Equal(t, *f.Expect.Divergence, replayDivergence{d.Path, d.Want, d.Got})
		assert.Equal(t, "actions: the replay departs from its entry at "+d.Path+": "+d.Reason(), err.Error(),
			"the message names the path and the cause, no value")
		assert.ErrorIs(t, err, codes.Diverged)
		assert.Equal(t, codes.Diverged, CodeOf(err))
		assert.NoError(t, errors.Unwrap(err), "a divergence wraps no sentinel")
		if f.Expect.UnwrapsCode == "" {
			assert.NoError(t, d.Err, "a replay that was done has no error")
		} else {
			var r *Refusal
			require.ErrorAs(t, d.Err, &r)
			assert.Equal(t, f.Expect.UnwrapsCode, r.Code)
		}
	}
	for id, n := range f.Expect.BodyRuns {
		counter, ok := replaying.runs[id]
		require.True(t, ok, "body_runs names %s, which the replay does not register", id)
		assert.Equal(t, n, counter.Load(), "replay runs of the body of %s", id)
	}
}

// TestReplayEveryRunFixture replays the entry of every call of
// testdata/runs on the registry that made it: whatever the call did, done
// or refused, nested or not, the replay matches it.
func TestReplayEveryRunFixture(t *testing.T) {
	fixtures := loadRunScenarios(t)
	names := make([]string, 0, len(fixtures))
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	replayed := 0
	for _, name := range names {
		f := fixtures[name]
		if f.Call.CancelBefore || f.Call.CancelDuring {
			continue // a cancelled call says nothing to replay
		}
		t.Run(name, func(t *testing.T) {
			s := &runScripts{runs: map[string]*atomic.Int64{}, waiting: make(chan struct{}, 1)}
			opts := &Options{}
			if f.Limits != nil {
				opts.Limits = *f.Limits
			}
			if f.Host != nil {
				opts.Resolve = f.Host.resolver()
			}
			reg := replayRegistry(t, s, f.Actions, opts)
			for _, c := range append([]runCall{f.Call}, thenCalls(f.Then)...) {
				var params any
				switch {
				case c.ParamsText != nil:
					params = []byte(*c.ParamsText)
				case c.Params != nil:
					params = runExact(t, c.Params)
				}
				res, _ := reg.Run(context.Background(), Call{Action: c.ID, Params: params})
				got, err := reg.Replay(context.Background(), res.Records[0])
				require.NoError(t, err, "replay of %s", c.ID)
				want, _ := CanonicalJSON(res.Entry())
				again, _ := CanonicalJSON(got)
				assert.Equal(t, string(want), string(again))
			}
		})
		replayed++
	}
	assert.GreaterOrEqual(t, replayed, 35, "run fixtures replayed")
}

func thenCalls(then []runFollowUp) []runCall {
	out := make([]runCall, len(then))
	for i, f := range then {
		out[i] = f.Call
	}
	return out
}

func TestReplayCancelled(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "garden/ping"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return "pong", nil }}))
	_, entry, err := call3(reg, context.Background(), "garden/ping", nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = reg.Replay(ctx, store.Record{Entry: entry})
	assert.ErrorIs(t, err, context.Canceled, "a cancelled replay says nothing about the entry")
	var d *Divergence
	assert.False(t, errors.As(err, &d))
}

// TestReplayBatchEntries replays each entry a batch recorded: each is a
// top-level call with its placeholders already substituted.
func TestReplayBatchEntries(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "garden/plant", Parameters: `{"type":"object","properties":{"species":{"type":"string"}},"required":["species"]}`},
		Run: func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
			if err := tr.Command(map[string]any{"op": "create", "species": p["species"]}, map[string]any{"key": "k-" + p["species"].(string)}); err != nil {
				return nil, err
			}
			return map[string]any{"key": "k-" + p["species"].(string)}, nil
		}}))
	batch, err := decodeBatch([]byte(`{"commands":[
		{"call":"garden/plant","with":{"species":"rose"},"as":"a"},
		{"call":"garden/plant","with":{"species":"${a.key}"}}]}`), Limits{})
	require.NoError(t, err)
	_, entries, err := batch3(reg, context.Background(), batch, nil)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, `{"species":"k-rose"}`, entries[1].Parameters, "the placeholder was substituted before the entry")
	for i, e := range entries {
		_, err := reg.Replay(context.Background(), store.Record{Entry: e})
		assert.NoError(t, err, "entry %d", i)
	}
}

// TestReplayDeepRecordedEntry replays an entry a host built in Go with
// calls nested far deeper than any run records: the comparison stops at
// the registry's call depth instead of walking (or marshalling) it all.
func TestReplayDeepRecordedEntry(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "garden/ping"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return "pong", nil }}))
	deep := store.RunEntry{Action: "garden/ping", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}
	for range 200_000 {
		inner := deep
		deep = store.RunEntry{Action: "garden/ping", Parameters: "{}", Steps: []store.RunStep{{Call: &inner}}, Outcome: store.OutcomeDone}
	}
	var err error
	allocs := testing.AllocsPerRun(1, func() { _, err = reg.Replay(context.Background(), store.Record{Entry: deep}) })
	var d *Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, Divergence{Path: "/steps/0"}, *d, "the recorded step nests too deep to be written out")
	assert.Less(t, allocs, 1000.0, "the replay walked the recorded chain")
}

// TestReplayLargeGoValue replays a call made with a Go value whose
// canonical text passes MaxParamBytes, a bound that holds for JSON text
// only: the entry replays as the value it records, and matches.
func TestReplayLargeGoValue(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxParamBytes: 100}})
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "garden/note", Parameters: `{"type":"object"}`},
		Run: func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
			return nil, tr.Command(map[string]any{"op": "note", "len": len(p["text"].(string))}, nil)
		}}))
	_, entry, err := call3(reg, context.Background(), "garden/note", map[string]any{"text": strings.Repeat("x", 500)})
	require.NoError(t, err)
	require.Greater(t, len(entry.Parameters), 100)
	_, err = reg.Replay(context.Background(), store.Record{Entry: entry})
	assert.NoError(t, err)
}

// TestReplayHeldAfterPolicyChange: a record held for confirmation, replayed
// where the action no longer needs it, departs and names the policy, and
// its body does not run (a replay of a held call never runs the body).
func TestReplayHeldAfterPolicyChange(t *testing.T) {
	def := Definition{ID: "shop/discard", Effect: EffectDelete, NeedsConfirmation: true}
	var ran atomic.Int32
	body := func(context.Context, map[string]any, *Trace) (any, error) { ran.Add(1); return "gone", nil }
	reg := NewRegistry(nil)
	reg.MustRegister(New(def, body))
	res, err := reg.Run(context.Background(), Call{Action: "shop/discard", Caller: &identity.Caller{Principal: "p", Surface: identity.SurfaceUI}})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	held := res.Records[0]
	_, err = reg.Replay(context.Background(), held)
	require.NoError(t, err, "held replays as held")

	def.NeedsConfirmation = false
	today := NewRegistry(nil)
	today.MustRegister(New(def, body))
	_, err = today.Replay(context.Background(), held)
	var d *Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, codes.ConfirmationRequired, d.Code)
	assert.Contains(t, d.Reason(), "policy")
	assert.Zero(t, ran.Load(), "no body ran")
}
