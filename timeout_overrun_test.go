package actions_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// TestNestedOverrunUndoesTheUnit: a nested call answered timeout while
// its body runs on leaves the unit unable to commit, even when the outer
// body swallows the refusal and returns a value: that body may write yet.
func TestNestedOverrunUndoesTheUnit(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	release := make(chan struct{})
	defer close(release)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "t/stuck", Timeout: 20 * time.Millisecond},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				<-release // ignores ctx
				return nil, nil
			}),
		actions.New(actions.Definition{ID: "t/outer"},
			func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
				_, err := tr.Call(ctx, "t/stuck", nil)
				if actions.CodeOf(err) != codes.Timeout {
					return nil, err
				}
				return "carried on", nil // swallows the nested timeout
			}),
	)
	res, err := reg.Run(context.Background(), actions.Call{Action: "t/outer"})
	require.ErrorIs(t, err, codes.Timeout)
	require.Len(t, res.Records, 1)
	assert.True(t, res.Records[0].RolledBack)
}
