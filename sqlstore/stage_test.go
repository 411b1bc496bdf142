package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// stageLog writes a log with every stage: a plain call, two held calls,
// the first confirmed and the second rejected. It returns the two
// changes' ids.
func stageLog(t *testing.T, s *sqlstore.Store) (confirmed, rejected string) {
	t.Helper()
	ctx := context.Background()
	reg := actions.NewRegistry(&actions.Options{Store: s, Gate: &actions.GateOptions{Pending: s.Pending()}})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "t/purge", Effect: actions.EffectDelete, NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "purged", nil }),
		actions.New(actions.Definition{ID: "t/note", Additive: true, Parameters: `{"type":"object"}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "noted", nil }),
	)
	eve := &identity.Caller{Principal: "eve", Surface: identity.SurfaceUI}
	_, err := reg.Run(ctx, actions.Call{Action: "t/note", Caller: eve})
	require.NoError(t, err)
	hold := func(n int) string {
		_, err := reg.Run(ctx, actions.Call{Action: "t/purge", Params: map[string]any{"n": n}, Caller: eve})
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		require.NotNil(t, r.Pending)
		return r.Pending.ID
	}
	confirmed, rejected = hold(1), hold(2)
	_, err = reg.Decide(ctx, actions.Decision{Change: confirmed, Confirm: true, Caller: eve})
	require.NoError(t, err)
	_, err = reg.Decide(ctx, actions.Decision{Change: rejected, Caller: eve})
	require.NoError(t, err)
	return confirmed, rejected
}

// seqs are the records' Seqs, in the order read.
func seqs(recs []sqlstore.Record) []int64 {
	out := []int64{}
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

// TestReadByStageAndPendingChange: the log read by Audit.Stage (an empty
// stage standing for calls that touched no change) and by pending change,
// alone, together and newest first. The log is 1 the plain call, 2 and 3
// the two held calls, 4 the confirmation of the first, 5 the rejection
// of the second.
func TestReadByStageAndPendingChange(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		confirmed, rejected := stageLog(t, s)
		for _, c := range []struct {
			name string
			f    sqlstore.Filter
			want []int64
		}{
			{"held", sqlstore.Filter{Stages: []store.Stage{store.StageHeld}}, []int64{2, 3}},
			{"confirmed", sqlstore.Filter{Stages: []store.Stage{store.StageConfirmed}}, []int64{4}},
			{"rejected", sqlstore.Filter{Stages: []store.Stage{store.StageRejected}}, []int64{5}},
			{"no stage", sqlstore.Filter{Stages: []store.Stage{""}}, []int64{1}},
			{"no stage or confirmed", sqlstore.Filter{Stages: []store.Stage{"", store.StageConfirmed}}, []int64{1, 4}},
			{"empty list: any stage", sqlstore.Filter{Stages: []store.Stage{}}, []int64{1, 2, 3, 4, 5}},
			{"refused, not held", sqlstore.Filter{Outcome: store.OutcomeRefused, Stages: []store.Stage{"", store.StageConfirmed, store.StageRejected}}, []int64{5}},
			{"change confirmed", sqlstore.Filter{PendingChange: confirmed}, []int64{2, 4}},
			{"change rejected", sqlstore.Filter{PendingChange: rejected}, []int64{3, 5}},
			{"change's decision", sqlstore.Filter{PendingChange: confirmed, Stages: []store.Stage{store.StageConfirmed, store.StageRejected}}, []int64{4}},
			{"newest first", sqlstore.Filter{PendingChange: rejected, Newest: true, Limit: 1}, []int64{5}},
			{"before, newest first", sqlstore.Filter{Stages: []store.Stage{store.StageHeld}, Before: 3, Newest: true}, []int64{2}},
			{"by code", sqlstore.Filter{Code: codes.ConfirmationRequired, Newest: true}, []int64{3, 2}},
			{"unknown change", sqlstore.Filter{PendingChange: "0123456789abcdef0123456789abcdef"}, []int64{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				recs, err := s.Read(ctx, c.f)
				require.NoError(t, err)
				assert.Equal(t, c.want, seqs(recs))
				for _, r := range recs {
					if len(c.f.Stages) > 0 {
						assert.Contains(t, c.f.Stages, r.Audit.Stage, "seq %d", r.Seq)
					}
					if c.f.PendingChange != "" {
						assert.Equal(t, c.f.PendingChange, r.Audit.PendingChange, "seq %d", r.Seq)
					}
				}
			})
		}
	})
}

// TestMigrateFillsTheStage: records written before the stage had a
// column of its own (schema version 4) get it from their audit.
func TestMigrateFillsTheStage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		stageLog(t, s)
		for _, q := range []string{
			"DROP INDEX actions_run_log_staged",
			"ALTER TABLE actions_run_log DROP COLUMN stage",
			"DROP INDEX actions_run_log_pending",
			"ALTER TABLE actions_keys DROP COLUMN origin",
			"UPDATE actions_schema SET version = 4",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err, q)
		}
		require.NoError(t, s.Migrate(ctx))
		for stage, want := range map[store.Stage][]int64{"": {1}, store.StageHeld: {2, 3}, store.StageConfirmed: {4}, store.StageRejected: {5}} {
			recs, err := s.Read(ctx, sqlstore.Filter{Stages: []store.Stage{stage}})
			require.NoError(t, err)
			assert.Equal(t, want, seqs(recs), "stage %q", stage)
		}
	})
}
