package actions_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// A principal's running tasks are bounded; another principal's are
// counted apart, and an ended task frees its place.
func TestTaskMaxRunning(t *testing.T) {
	release := make(chan struct{})
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	reg.MustRegister(actions.New(actions.Definition{ID: "reports/build", Long: true},
		func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			<-release
			return "done", nil
		}))
	ctx := context.Background()
	ann, bob := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}, &identity.Caller{Principal: "bob", Surface: identity.SurfaceUI}
	o := actions.TaskOptions{MaxRunning: 1}
	first, err := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, o)
	require.NoError(t, err)
	_, err = reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, o)
	assert.ErrorIs(t, err, codes.RateLimited)
	_, err = reg.Start(ctx, actions.Call{Action: "reports/build", Caller: bob}, o)
	require.NoError(t, err, "bob's tasks are his own")
	close(release)
	require.Eventually(t, func() bool {
		got, err := reg.Task(ctx, first.ID, ann)
		require.NoError(t, err)
		return got.Status == store.TaskCompleted
	}, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, o)
		return err == nil
	}, 10*time.Second, time.Millisecond, "an ended task frees its place")
}

// The in-memory log keeps the same rules: a terminal status stays.
func TestRunLogTaskTerminalStays(t *testing.T) {
	log := actions.NewRunLog()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	_, created, err := log.CreateTask(ctx, store.Task{ID: "t", Status: store.TaskWorking, Created: now, Updated: now})
	require.NoError(t, err)
	require.True(t, created)
	ok, err := log.EndTask(ctx, "t", store.Task{Status: store.TaskCompleted, Updated: now, Answer: json.RawMessage(`{"value":"1"}`)})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = log.EndTask(ctx, "t", store.Task{Status: store.TaskCancelled, Updated: now})
	require.NoError(t, err)
	assert.False(t, ok)
	got, err := log.TaskByID(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, store.TaskCompleted, got.Status)
	res, err := actions.TaskResult(got)
	require.NoError(t, err)
	assert.Equal(t, "1", res.Text)
}
