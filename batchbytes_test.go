package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// copyRegistry has t/big, whose result is {"s": a string of n bytes},
// and t/take, which takes a string s and answers its length: the batch
// of the run-log flood, each step copying t/big's string.
func copyRegistry(t *testing.T, opts *actions.Options, n int) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(opts)
	big := strings.Repeat("x", n)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "t/big", Parameters: `{"type":"object"}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"s": big}, nil
			}),
		actions.New(actions.Definition{ID: "t/take", Parameters: `{"type":"object","properties":{"s":{"type":"string"}}}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				s, _ := p["s"].(string)
				return map[string]any{"n": len(s)}, nil
			}),
	)
	return reg
}

// copyBatch is t/big named a, then steps steps each copying a.s.
func copyBatch(steps int) *actions.Batch {
	b := &actions.Batch{Steps: []actions.Step{{Call: "t/big", As: "a"}}}
	for range steps {
		b.Steps = append(b.Steps, actions.Step{Call: "t/take", With: map[string]any{"s": "${a.s}"}})
	}
	return b
}

// recordedBytes is the size of the texts of every entry in the store,
// kept and undone.
func recordedBytes(t *testing.T, store *sqlstore.Store) (int, int) {
	t.Helper()
	recs, err := store.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
	require.NoError(t, err)
	n := 0
	for _, r := range recs {
		text, err := json.Marshal(r.Entry)
		require.NoError(t, err)
		n += len(text)
	}
	return n, len(recs)
}

// TestBatchBytesBoundsACopyingBatch: the row's batch, 1,000 steps (999 each
// copying a 1 MB result with "${a.s}"), is refused at the step that would
// pass Limits.MaxBatchBytes (4 MiB by default: the fifth copy), before
// it runs, naming the bound and not the values; the run log holds at
// most the bound (the unit's entries as its audit trail), and the
// bytes allocated while the batch ran (an upper bound of its peak heap)
// stay a small multiple of it.
func TestBatchBytesBoundsACopyingBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("copies 4 MB five times (minutes under -race); CI runs it without the race detector, TestBatchBytesScaled under it")
	}
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		store, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(ctx))
		reg := copyRegistry(t, &actions.Options{Store: store}, 1_000_000)
		assert.Equal(t, 4<<20, reg.Limits().MaxBatchBytes)

		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = reg.Run(ctx, actions.Call{Batch: copyBatch(999)})
		runtime.ReadMemStats(&after)
		require.Error(t, err)
		assert.True(t, errors.Is(err, codes.InvalidScriptStep))
		var se *actions.StepError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 5, se.Index, "steps 1 to 4 copy 4 MB; the fifth copy would pass 4 MiB")
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		require.Len(t, r.Issues, 1)
		assert.Equal(t, "maxBatchBytes", r.Issues[0].Keyword)
		assert.Contains(t, r.Message, "4194304 bytes")
		assert.NotContains(t, err.Error(), "xxxx", "the refusal names the bound, not the values")

		recorded, n := recordedBytes(t, store)
		assert.Equal(t, 5, n, "the five steps that ran are the audit trail")
		assert.LessOrEqual(t, recorded, 4<<20+8<<10, "the log grew by at most the bound")
		alloc := after.TotalAlloc - before.TotalAlloc
		assert.Less(t, alloc, uint64(160<<20), "allocated while the batch ran")
		t.Logf("%s: recorded %d bytes in %d entries; allocated %d MiB in all", db.Name(), recorded, n, alloc>>20)
	})
}

// TestBatchBytesScaled: the bound scaled down (10,000 bytes, 1,000-byte
// strings): the step that would pass it is refused before it runs, the
// steps before it ran; with the bound off (negative), the same batch is
// done.
func TestBatchBytesScaled(t *testing.T) {
	ctx := context.Background()
	var ran []store.RunEntry
	reg := copyRegistry(t, &actions.Options{Limits: actions.Limits{MaxBatchBytes: 10_000},
		OnRecord: func(r store.Record) { ran = append(ran, r.Entry) }}, 1000)
	_, err := reg.Run(ctx, actions.Call{Batch: copyBatch(100)})
	var se *actions.StepError
	require.ErrorAs(t, err, &se)
	// Step 0 records about 1,100 bytes (its result whole: under 4 KiB);
	// each copy about 1,030.
	spent := 0
	for _, e := range ran {
		text, _ := json.Marshal(e)
		spent += len(text)
	}
	assert.Len(t, ran, se.Index, "every step before the refused one ran, and no other")
	assert.Greater(t, se.Index, 5)
	assert.LessOrEqual(t, spent, 10_000+len(ran)*200, "what ran stays within the bound (entry JSON framing aside)")
	assert.Equal(t, "/commands/"+strconv.Itoa(se.Index), se.Pointer())

	reg = copyRegistry(t, &actions.Options{Limits: actions.Limits{MaxBatchBytes: -1}}, 1000)
	_, err = reg.Run(ctx, actions.Call{Batch: copyBatch(100)})
	require.NoError(t, err)
}

// TestBatchBytesPlaceholderCopyStopsAtTheBound: one step copying a
// 1,000-byte result 100 times (within MaxParamBytes) passes a 10,000
// byte batch bound while substituting: refused with maxBatchBytes, not
// the per-step bound.
func TestBatchBytesPlaceholderCopyStopsAtTheBound(t *testing.T) {
	reg := copyRegistry(t, &actions.Options{Limits: actions.Limits{MaxBatchBytes: 10_000}}, 1000)
	b := &actions.Batch{Steps: []actions.Step{{Call: "t/big", As: "a"},
		{Call: "t/take", With: map[string]any{"s": strings.Repeat("${a.s}", 100)}}}}
	_, err := reg.Run(context.Background(), actions.Call{Batch: b})
	var se *actions.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Index)
	var r *actions.Refusal
	require.ErrorAs(t, err, &r)
	require.Len(t, r.Issues, 1)
	assert.Equal(t, "maxBatchBytes", r.Issues[0].Keyword)
}
