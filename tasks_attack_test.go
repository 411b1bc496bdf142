package actions_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// countingLog is a RunLog that counts the tasks it was asked to keep.
type countingLog struct {
	*actions.RunLog
	created atomic.Int32
}

func (l *countingLog) CreateTask(ctx context.Context, t store.Task) (store.Task, bool, error) {
	kept, created, err := l.RunLog.CreateTask(ctx, t)
	if created {
		l.created.Add(1)
	}
	return kept, created, err
}

// A call the gate refuses (a caller who may not call the action, or one
// over its rate) is refused by Start itself and keeps no task: otherwise a
// client refused every call could still fill the store with tasks, each
// kept for its TTL.
func TestTaskGateRefusesBeforeATaskIsKept(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	log := &countingLog{RunLog: actions.NewRunLog()}
	var refused atomic.Int32
	reg := actions.NewRegistry(&actions.Options{Store: log, Now: func() time.Time { return now }, Gate: &actions.GateOptions{Rate: 0.001, Burst: 1},
		OnRecord: func(rec store.Record) {
			if rec.Entry.Outcome == store.OutcomeRefused {
				refused.Add(1)
			}
		}})
	var ran atomic.Int32
	reg.MustRegister(actions.New(actions.Definition{ID: "reports/build", Long: true, Capability: "reports"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) {
			ran.Add(1)
			return "done", nil
		}))
	ctx := context.Background()
	stranger := &identity.Caller{Principal: "eve", Surface: identity.SurfaceUI}
	_, err := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: stranger}, actions.TaskOptions{})
	require.Error(t, err, "a caller without the capability is refused at once")
	assert.Zero(t, log.created.Load(), "and no task is kept")
	_, err = reg.Start(ctx, actions.Call{Action: "reports/" + strings.Repeat("x", 10000), Caller: &identity.Caller{Principal: "mallory", Surface: identity.SurfaceUI}}, actions.TaskOptions{})
	assert.ErrorIs(t, err, codes.UnknownAction, "an action nothing serves is refused at once")
	assert.Zero(t, log.created.Load(), "and keeps no task under its name")

	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI, Capabilities: []string{"reports"}}
	first, err := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, actions.TaskOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := reg.Task(ctx, first.ID, ann)
		require.NoError(t, err)
		return got.Status.Terminal()
	}, 10*time.Second, time.Millisecond)
	got, err := reg.Task(ctx, first.ID, ann)
	require.NoError(t, err)
	_, err = actions.TaskResult(got)
	require.NoError(t, err, "the first call is within the rate and its token is spent once")
	for range 5 {
		_, err = reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, actions.TaskOptions{})
		assert.ErrorIs(t, err, codes.RateLimited)
	}
	assert.EqualValues(t, 1, log.created.Load(), "calls over the rate keep no task")
	assert.EqualValues(t, 1, ran.Load())
	assert.EqualValues(t, 7, refused.Load(), "each refused call is recorded, as Run records it")
}

// A caller without a principal (anonymous) owns no task and finds none:
// its empty principal is not the host's, whose tasks it would otherwise
// read and cancel, nor another anonymous caller's.
func TestTaskAnonymousCallerFindsNoTask(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	reg.MustRegister(actions.New(actions.Definition{ID: "reports/build", Long: true},
		func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			<-release
			return "secret", nil
		}))
	ctx := context.Background()
	hosts, err := reg.Start(ctx, actions.Call{Action: "reports/build"}, actions.TaskOptions{})
	require.NoError(t, err)
	anon := &identity.Caller{Surface: identity.SurfaceMCP}
	_, err = reg.Task(ctx, hosts.ID, anon)
	assert.ErrorIs(t, err, store.ErrTaskNotFound, "the host's task is not an anonymous caller's")
	assert.ErrorIs(t, reg.CancelTask(ctx, hosts.ID, anon), store.ErrTaskNotFound)
	got, err := reg.Task(ctx, hosts.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, store.TaskWorking, got.Status, "nor cancelled by one")

	_, err = reg.Start(ctx, actions.Call{Action: "reports/build", Caller: anon}, actions.TaskOptions{})
	assert.ErrorIs(t, err, codes.Internal, "a task needs an owner")
}

// cancellingLog cancels each task as soon as it is kept, before Start
// has started its call: a cancel that comes in that window.
type cancellingLog struct {
	*actions.RunLog
	reg    *actions.Registry
	caller *identity.Caller
}

func (l *cancellingLog) CreateTask(ctx context.Context, t store.Task) (store.Task, bool, error) {
	kept, created, err := l.RunLog.CreateTask(ctx, t)
	if created {
		if err := l.reg.CancelTask(ctx, t.ID, l.caller); err != nil {
			return kept, created, err
		}
	}
	return kept, created, err
}

// A task cancelled after it is kept but before its call starts runs its
// body with its context already cancelled (cause: the cancellation), as
// a cancel a moment later would: the body is not left to run on, and
// reach outside the store, for a task already ended cancelled.
func TestTaskCancelledBeforeItsCallStarts(t *testing.T) {
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	log := &cancellingLog{RunLog: actions.NewRunLog(), caller: ann}
	recorded := make(chan store.Record, 1)
	reg := actions.NewRegistry(&actions.Options{Store: log, OnRecord: func(rec store.Record) { recorded <- rec }})
	log.reg = reg
	var live atomic.Int32
	reg.MustRegister(actions.New(actions.Definition{ID: "payments/send", Long: true},
		func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			if ctx.Err() == nil {
				live.Add(1)
			}
			return "sent", nil
		}))
	ctx := context.Background()
	task, err := reg.Start(ctx, actions.Call{Action: "payments/send", Caller: ann}, actions.TaskOptions{})
	require.NoError(t, err)
	rec := <-recorded
	assert.Zero(t, live.Load(), "no body ran with a live context")
	assert.Equal(t, codes.Cancelled, rec.Entry.Error)
	got, err := reg.Task(ctx, task.ID, ann)
	require.NoError(t, err)
	assert.Equal(t, store.TaskCancelled, got.Status)
}

// The in-memory log does not keep ended, expired tasks without end: a
// client that starts tasks and never reads them back would otherwise
// grow the host's memory for as long as it runs.
func TestRunLogForgetsExpiredTasks(t *testing.T) {
	log := actions.NewRunLog()
	ctx := context.Background()
	then := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var old []string
	for i := range 200 {
		id := fmt.Sprintf("old-%d", i)
		_, _, err := log.CreateTask(ctx, store.Task{ID: id, Principal: "eve", Status: store.TaskCompleted, Created: then, Updated: then, TTL: time.Minute})
		require.NoError(t, err)
		old = append(old, id)
	}
	running := store.Task{ID: "running", Principal: "ann", Status: store.TaskWorking, Created: then, Updated: then, TTL: time.Minute}
	_, _, err := log.CreateTask(ctx, running)
	require.NoError(t, err)
	later := then.Add(time.Hour)
	for i := range 400 {
		_, _, err := log.CreateTask(ctx, store.Task{ID: fmt.Sprintf("new-%d", i), Principal: "eve", Status: store.TaskWorking, Created: later, Updated: later, TTL: time.Minute})
		require.NoError(t, err)
	}
	for _, id := range old {
		_, err := log.TaskByID(ctx, id)
		require.ErrorIs(t, err, store.ErrTaskNotFound, "an ended task past its TTL is forgotten")
	}
	_, err = log.TaskByID(ctx, "running")
	assert.NoError(t, err, "a running task is kept whatever its TTL")
}
