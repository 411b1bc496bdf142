package actions

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valueRegistry registers t/open, which draws a ticket number from seq
// (as a database sequence would) through Trace.Value, the time through
// Trace.Now and an id through Trace.NewID, records a command naming them,
// and calls t/stamp, which draws a time of its own. raw, when set, draws
// the number straight from seq instead.
func valueRegistry(seq *atomic.Int64, clock func() time.Time, raw bool) *Registry {
	reg := NewRegistry(&Options{Now: clock})
	reg.MustRegister(
		New(Definition{ID: "t/open"}, func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			var n any
			if raw {
				n = json.Number(itoa64(seq.Add(1)))
			} else {
				var err error
				if n, err = tr.Value("ticket", func() (any, error) { return seq.Add(1), nil }); err != nil {
					return nil, err
				}
			}
			id, at := tr.NewID(), tr.Now()
			if err := tr.Command(map[string]any{"op": "insert", "ticket": n, "id": id, "at": at.Format(time.RFC3339Nano)}, 1); err != nil {
				return nil, err
			}
			stamp, err := tr.Call(ctx, "t/stamp", nil)
			return map[string]any{"ticket": n, "id": id, "stamp": stamp}, err
		}),
		New(Definition{ID: "t/stamp"}, func(_ context.Context, _ map[string]any, tr *Trace) (any, error) {
			return tr.Now().Format(time.RFC3339Nano), nil
		}),
	)
	return reg
}

func itoa64(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A replay gives the body the values it drew: another sequence position,
// another clock and other random ids replay exactly, nested calls
// included; drawn without the trace, the number diverges.
func TestTraceValueReplaysExactly(t *testing.T) {
	ctx := context.Background()
	var live atomic.Int64
	live.Store(41)
	at := time.Date(2026, 12, 2, 10, 0, 0, 123, time.UTC)
	reg := valueRegistry(&live, func() time.Time { return at }, false)
	res, err := reg.Run(ctx, Call{Action: "t/open"})
	require.NoError(t, err)
	entry := res.Entry()
	require.Len(t, entry.Steps, 5, "ticket, id, now, the command, the nested call")
	assert.JSONEq(t, `{"value":"ticket"}`, string(entry.Steps[0].Command))
	assert.Equal(t, "42", entry.Steps[0].Result)
	assert.JSONEq(t, `{"value":"id"}`, string(entry.Steps[1].Command))
	assert.Regexp(t, `^"[0-9a-f]{32}"$`, entry.Steps[1].Result)
	assert.Equal(t, `"2026-12-02T10:00:00.000000123Z"`, entry.Steps[2].Result)
	assert.Equal(t, json.Number("42"), res.Value.(map[string]any)["ticket"], "the live run sees the recorded form")

	// Another replica: its sequence elsewhere, its clock later.
	var other atomic.Int64
	other.Store(1000)
	replica := valueRegistry(&other, func() time.Time { return at.Add(time.Hour) }, false)
	got, err := replica.Replay(ctx, res.Records[0])
	require.NoError(t, err, "the recorded values are given back")
	assert.Equal(t, int64(1000), other.Load(), "the sequence is not drawn on replay")
	text, _ := CanonicalJSON(got)
	want, _ := CanonicalJSON(entry)
	assert.Equal(t, string(want), string(text))

	// The same body drawing the number itself diverges at that command.
	var rawSeq atomic.Int64
	rawReg := valueRegistry(&rawSeq, func() time.Time { return at }, true)
	rawRes, err := rawReg.Run(ctx, Call{Action: "t/open"})
	require.NoError(t, err)
	rawSeq.Store(1000)
	_, err = rawReg.Replay(ctx, rawRes.Records[0])
	var d *Divergence
	require.ErrorAs(t, err, &d)
	assert.Equal(t, "/steps/2/command", d.Path)
}

// fn's error reaches the body and records nothing; a value with no
// canonical JSON is refused; after the body returned nothing is drawn.
func TestTraceValueErrors(t *testing.T) {
	tr := NewTrace("t/x")
	boom := errors.New("sequence down")
	_, err := tr.Value("n", func() (any, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	_, err = tr.Value("n", func() (any, error) { return func() {}, nil })
	var ce *CanonicalError
	assert.ErrorAs(t, err, &ce)
	assert.Empty(t, tr.Steps())

	v, err := tr.Value("n", func() (any, error) { return map[string]any{"b": 1.5, "a": []int{1}}, nil })
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": []any{json.Number("1")}, "b": json.Number("1.5")}, v)
	assert.Equal(t, `{"a":[1],"b":1.5}`, tr.Steps()[0].Result)

	reg := NewRegistry(nil)
	var kept *Trace
	reg.MustRegister(New(Definition{ID: "t/leak"}, func(_ context.Context, _ map[string]any, tr *Trace) (any, error) {
		kept = tr
		return nil, nil
	}))
	_, err = reg.Run(context.Background(), Call{Action: "t/leak"})
	require.NoError(t, err)
	called := false
	_, err = kept.Value("n", func() (any, error) { called = true; return 1, nil })
	assert.Error(t, err)
	assert.False(t, called, "nothing is drawn for a call that is over")
	assert.False(t, kept.Now().IsZero(), "Now still tells the time")
}
