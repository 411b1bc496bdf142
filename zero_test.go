package actions

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// The zero value of every exported type either works or fails with a
// clear error; none panics (issue: safe zero values). One test per type.

func TestZeroRegistry(t *testing.T) {
	var reg Registry
	require.NoError(t, reg.Register(New(Definition{ID: "a/b", Effect: EffectRead}, func(context.Context, map[string]any, *Trace) (any, error) { return "ok", nil })))
	res, err := reg.Run(context.Background(), Call{Action: "a/b"})
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Value)
	assert.Equal(t, defaultLimits.MaxCallDepth, reg.Limits().MaxCallDepth, "the default limits")
	_, err = reg.Decide(context.Background(), Decision{Change: "x", Caller: &identity.Caller{Principal: "p"}})
	assert.ErrorIs(t, err, codes.UnknownChange)
}

func TestZeroRunLog(t *testing.T) {
	var log RunLog
	recs, err := log.Atomic(context.Background(), func(context.Context) store.Unit {
		return store.Unit{Records: []store.Record{{Entry: store.RunEntry{Action: "a/b", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}}}, Commit: true}
	})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Len(t, log.Records(), 1)
	assert.Len(t, entriesOf(log.Records()), 1)
}

func TestZeroEntryWriter(t *testing.T) {
	var w EntryWriter
	w.Write(store.Record{})
	assert.ErrorIs(t, w.Err(), errNoWriter, "a writer without an io.Writer says so")
	var buf bytes.Buffer
	NewEntryWriter(&buf).Write(store.Record{Entry: store.RunEntry{Action: "a/b", Steps: []store.RunStep{}}})
	assert.NotEmpty(t, buf.String())
}

func TestZeroMemoryPendingStoreIsEmpty(t *testing.T) {
	var s memoryPendingStore
	ctx := context.Background()
	_, err := s.Get(ctx, "x")
	assert.ErrorIs(t, err, ErrNoPendingChange)
	_, err = s.Take(ctx, "x")
	assert.ErrorIs(t, err, ErrNoPendingChange)
	list, err := s.List(ctx, "p")
	require.NoError(t, err)
	assert.Empty(t, list)
	require.NoError(t, s.Hold(ctx, PendingChange{ID: "x", Proposer: identity.Caller{Principal: "p"}}))
	got, err := s.Take(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, "x", got.ID)
}

func TestZeroServing(t *testing.T) {
	var s Serving
	s.Stop("a/b")
	s.SetReadOnly(true)
	s.Resume("a/b")
	s.ResumeAll()
	reg := NewRegistry(&Options{Gate: &GateOptions{Serving: &s}})
	reg.MustRegister(New(Definition{ID: "a/b"}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
	_, err := reg.Run(context.Background(), Call{Action: "a/b"})
	assert.ErrorIs(t, err, codes.ReadOnly, "ResumeAll leaves read-only as it was")
	s.SetReadOnly(false)
	_, err = reg.Run(context.Background(), Call{Action: "a/b"})
	assert.NoError(t, err)
}

func TestZeroTrace(t *testing.T) {
	var tr Trace
	require.NoError(t, tr.Command(map[string]any{"op": "x"}, nil))
	_, err := tr.Call(context.Background(), "a/b", nil)
	assert.ErrorIs(t, err, codes.UnknownAction, "a trace no registry runs calls nothing")
	assert.Len(t, tr.Steps(), 2)
	assert.Nil(t, tr.Caller())
}

func TestZeroParameterSchema(t *testing.T) {
	var ps ParameterSchema
	_, err := ps.Check(context.Background(), map[string]any{}, nil)
	assert.ErrorIs(t, err, codes.Internal, "the host's fault, not the caller's")
	assert.NotErrorIs(t, err, codes.InvalidParameters)
	assert.Nil(t, ps.schema())
}

func TestZeroValuesOfData(t *testing.T) {
	// Types that are data: their methods read a zero value sensibly.
	assert.Equal(t, store.RunEntry{}, Result{}.Entry())
	var c identity.Caller
	assert.True(t, c.Can(""))
	assert.False(t, c.Can("x"))
	var d Definition
	assert.Equal(t, EffectWrite, d.EffectOf())
	assert.True(t, d.IsDestructive())
	assert.True(t, d.offers(identity.SurfaceMCP))
	var r Refusal
	assert.Equal(t, "internal", r.Error())
	assert.Equal(t, codes.Internal, CodeOf(&r))
	assert.ErrorIs(t, &r, codes.Internal)
	var dv Divergence
	assert.ErrorIs(t, &dv, codes.Diverged)
	var se StepError
	assert.Equal(t, "/commands/0", se.Pointer())
	assert.Equal(t, "step 0: refused", se.Error())
	assert.NotPanics(t, func() { _ = (&CanonicalError{}).Error() })
	var b Batch
	reg := NewRegistry(nil)
	_, err := reg.Run(context.Background(), Call{Batch: &b})
	assert.NoError(t, err, "an empty batch runs no call")
}

func TestZeroTask(t *testing.T) {
	var task store.Task
	assert.False(t, task.Expired(task.Created), "a task that has not ended never expires")
	_, err := TaskResult(task)
	assert.ErrorIs(t, err, codes.InProgress, "no answer yet")
	var reg Registry
	_, err = reg.Start(context.Background(), Call{Action: "a/b"}, TaskOptions{})
	assert.ErrorIs(t, err, codes.Internal, "no store keeps tasks")
	_, err = reg.Task(context.Background(), "x", nil)
	assert.ErrorIs(t, err, codes.Internal)
}
