package actions_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

func TestRunUnitRefusesWhole(t *testing.T) {
	reg := gatedShop(nil)
	ctx := context.Background()

	// fn's own error undoes the unit and comes back as it is.
	mine := errors.New("mine")
	res, err := reg.RunUnit(ctx, editor, func(ctx context.Context, call actions.UnitCall) (any, error) {
		_, cerr := call("shop/restock", nil)
		require.NoError(t, cerr)
		return "x", mine
	})
	assert.ErrorIs(t, err, mine)
	require.Len(t, res.Records, 1)
	assert.True(t, res.Records[0].RolledBack)
	assert.Nil(t, res.Value)

	// A panic in fn is an internal refusal.
	_, err = reg.RunUnit(ctx, editor, func(context.Context, actions.UnitCall) (any, error) { panic("boom") })
	assert.ErrorIs(t, err, actions.CodeInternal)
	assert.NotContains(t, err.Error(), "boom")

	// A call kept past fn's return is refused.
	var kept actions.UnitCall
	_, err = reg.RunUnit(ctx, editor, func(_ context.Context, call actions.UnitCall) (any, error) { kept = call; return nil, nil })
	require.NoError(t, err)
	_, err = kept("shop/stock", nil)
	assert.ErrorIs(t, err, actions.CodeInternal)

	// A value with no JSON form refuses the unit.
	_, err = reg.RunUnit(ctx, editor, func(context.Context, actions.UnitCall) (any, error) { return func() {}, nil })
	assert.ErrorIs(t, err, actions.CodeInternal)

	// A cancelled context refuses the call and the unit.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = reg.RunUnit(cctx, editor, func(ctx context.Context, call actions.UnitCall) (any, error) {
		return call("shop/stock", nil)
	})
	assert.ErrorIs(t, err, actions.CodeCancelled)
}
