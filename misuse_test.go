package actions

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// A host's own mistakes get a clear refusal, nothing run or recorded;
// none panics.

func TestNilContextIsRefused(t *testing.T) {
	ran := 0
	log := NewRunLog()
	reg := NewRegistry(&Options{Store: log})
	reg.MustRegister(New(Definition{ID: "a/b"}, func(context.Context, map[string]any, *Trace) (any, error) { ran++; return "ok", nil }))
	var nilCtx context.Context
	_, err := reg.Run(nilCtx, Call{Action: "a/b"})
	assert.ErrorIs(t, err, codes.Internal, "Run")
	// The host's mistake: the same call fails again, so no retry is
	// advised.
	var rf *Refusal
	if assert.ErrorAs(t, err, &rf) {
		assert.Equal(t, codes.RetryNever, rf.Policy().Retry)
		assert.Contains(t, rf.NextAction, "context.Context")
	}
	_, err = reg.Start(nilCtx, Call{Action: "a/b"}, TaskOptions{})
	assert.ErrorIs(t, err, codes.Internal, "Start")
	_, err = reg.Decide(nilCtx, Decision{Change: "x", Caller: &identity.Caller{Principal: "p"}})
	assert.ErrorIs(t, err, codes.Internal, "Decide")
	_, err = reg.Replay(nilCtx, store.Record{Entry: store.RunEntry{Action: "a/b", Outcome: store.OutcomeDone}})
	assert.ErrorIs(t, err, codes.Internal, "Replay")
	assert.Zero(t, ran, "no body ran")
	assert.Empty(t, log.Records(), "nothing recorded")
}

func TestCallWithActionAndBatchIsRefused(t *testing.T) {
	ran := 0
	reg := NewRegistry(nil)
	reg.MustRegister(New(Definition{ID: "a/b"}, func(context.Context, map[string]any, *Trace) (any, error) { ran++; return "ok", nil }))
	_, err := reg.Run(context.Background(), Call{Action: "a/b", Batch: &Batch{Steps: []Step{{Call: "a/b"}}}})
	require.ErrorIs(t, err, codes.InvalidParameters)
	assert.Zero(t, ran)
}

func TestNilCallerHoldsEveryCapability(t *testing.T) {
	var host *identity.Caller
	assert.True(t, host.Can("admin"), "the host")
	assert.False(t, (&identity.Caller{}).Can("admin"))
	assert.True(t, (&identity.Caller{}).Can(""))
}

// TestDeepSchemaSaysSchemaLevels: a schema past the depth limit is
// refused in the limit's own terms however far past it is (the text's
// bound, checked first, counts JSON levels).
func TestDeepSchemaSaysSchemaLevels(t *testing.T) {
	for _, depth := range []int{34, 40, 5000} {
		_, err := CompileParameters(schemaOfDepth(depth), Limits{})
		rf := requireRefusal(t, err, codes.ConstraintViolation)
		require.NotEmpty(t, rf.Issues)
		assert.Contains(t, rf.Issues[0].Message, "schema nesting deeper than 32 levels", "depth %d", depth)
	}
}

// TestAnonymousHoldIsNotAskedForAKey: a caller without a principal
// calling an action that needs confirmation and a key is told at once
// that nobody can confirm it, not first asked for a key that would not
// help.
func TestAnonymousHoldIsNotAskedForAKey(t *testing.T) {
	reg := NewRegistry(&Options{Store: NewRunLog()})
	ran := 0
	reg.MustRegister(New(Definition{ID: "pay/charge", Effect: EffectWrite, NeedsConfirmation: true, NeedsIdempotencyKey: true},
		func(context.Context, map[string]any, *Trace) (any, error) { ran++; return nil, nil }))
	anon := &identity.Caller{Surface: identity.SurfaceMCP}
	for _, key := range []string{"", "k-1"} {
		_, err := reg.Run(context.Background(), Call{Action: "pay/charge", Caller: anon, IdempotencyKey: key})
		require.ErrorIs(t, err, codes.ConfirmationRequired, "key %q", key)
		assert.Nil(t, asRefusal(err).Pending, "nothing held")
		assert.Equal(t, codes.RetryNever, asRefusal(err).Retry)
	}
	// A person with a principal is still asked for the key first.
	_, err := reg.Run(context.Background(), Call{Action: "pay/charge", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}})
	require.ErrorIs(t, err, codes.IdempotencyKeyRequired)
	assert.Zero(t, ran)
}
