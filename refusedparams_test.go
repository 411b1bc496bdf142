package actions_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// TestRefusedCallsWriteLittle: a caller calls an action it may not see
// (it lacks the capability) 100 times with 1 MB of arguments. Each call
// is refused as unknown; its entry keeps the parameters as their SHA-256
// and size, so the 100 refusals add about 30 KB to the log, not 100 MB.
// Small parameters are still kept whole, and a call refused as invalid
// keeps large ones as a digest too.
func TestRefusedCallsWriteLittle(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		store, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(ctx))
		reg := actions.NewRegistry(&actions.Options{Store: store})
		reg.MustRegister(actions.New(actions.Definition{ID: "t/secret", Capability: "admin",
			Parameters: `{"type":"object","properties":{"s":{"type":"string","maxLength":10}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "ok", nil }))
		assert.Equal(t, 1<<10, reg.Limits().MaxRefusedParamBytes)

		big := map[string]any{"s": strings.Repeat("x", 1_000_000)}
		text, err := actions.CanonicalJSON(big)
		require.NoError(t, err)
		sum := sha256.Sum256(text)
		nobody := &identity.Caller{Principal: "mallory", Surface: identity.SurfaceMCP}
		calls := 100
		if raceEnabled {
			calls = 10 // full size in CI's run without the race detector
		}
		for range calls {
			_, err := reg.Run(ctx, actions.Call{Action: "t/secret", Params: big, Caller: nobody})
			require.True(t, errors.Is(err, codes.UnknownAction))
		}
		recorded, n := recordedBytes(t, store)
		assert.Equal(t, calls, n)
		assert.Less(t, recorded, calls*1024, "each refusal adds less than 1 KiB")
		t.Logf("%s: %d refused calls with 1 MB parameters recorded %d bytes", db.Name(), calls, recorded)

		recs, err := store.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone, Limit: 1})
		require.NoError(t, err)
		e := recs[0].Entry
		assert.Equal(t, codes.ForbiddenCapability, e.Error)
		assert.Equal(t, "null", e.Parameters)
		assert.Equal(t, hex.EncodeToString(sum[:]), e.ParametersSHA256)
		assert.Equal(t, len(text), e.ParametersBytes)
		// Replayed, it is refused again the same way: no divergence.
		_, err = reg.Replay(ctx, recs[0].Record)
		assert.NoError(t, err)

		// Small parameters are kept whole; an invalid call's large ones
		// are kept as a digest.
		admin := &identity.Caller{Principal: "ada", Surface: identity.SurfaceMCP, Capabilities: []string{"admin"}}
		_, err = reg.Run(ctx, actions.Call{Action: "t/secret", Params: map[string]any{"s": "hi"}, Caller: nobody})
		require.Error(t, err)
		_, err = reg.Run(ctx, actions.Call{Action: "t/secret", Params: big, Caller: admin})
		require.True(t, errors.Is(err, codes.InvalidParameters))
		recs, err = store.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone, Newest: true, Limit: 2})
		require.NoError(t, err)
		require.Len(t, recs, 2)
		assert.Equal(t, "null", recs[0].Entry.Parameters)
		assert.Equal(t, len(text), recs[0].Entry.ParametersBytes)
		assert.Equal(t, `{"s":"hi"}`, recs[1].Entry.Parameters)
		assert.Zero(t, recs[1].Entry.ParametersBytes)
		raw, err := json.Marshal(recs[1].Entry)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "parametersSHA256", "left out of a small call's entry")
	})
}
