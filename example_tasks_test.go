package actions_test

import (
	"context"
	"fmt"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

// A long call run as a task: the handle comes back at once, the answer
// later, to its owner only.
func ExampleRegistry_Start() {
	release := make(chan struct{})
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "reports/build", Long: true},
		Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			select {
			case <-release:
				return map[string]any{"pages": 12}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	ctx := context.Background()

	task, err := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, actions.TaskOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(task.Status)
	_, err = reg.Task(ctx, task.ID, &identity.Caller{Principal: "bob"})
	fmt.Println(err)

	close(release)
	t, _ := reg.Task(ctx, task.ID, ann)
	for !t.Status.Terminal() { // a client polls
		time.Sleep(time.Millisecond)
		t, _ = reg.Task(ctx, task.ID, ann)
	}
	res, _ := actions.TaskResult(t)
	fmt.Println(t.Status, res.Text)
	fmt.Println(reg.CancelTask(ctx, task.ID, ann), t.Status) // too late: it stays completed
	// Output:
	// working
	// actions: task not found
	// completed {"pages":12}
	// <nil> completed
}

// A running task cancelled by its owner: the body sees its context done,
// nothing it did is kept, and the task ends cancelled. Another caller
// cannot cancel it (it is not found for them).
func ExampleRegistry_CancelTask() {
	started := make(chan struct{})
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "reports/build", Long: true},
		Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	ctx := context.Background()
	task, _ := reg.Start(ctx, actions.Call{Action: "reports/build", Caller: ann}, actions.TaskOptions{})
	<-started

	fmt.Println(reg.CancelTask(ctx, task.ID, &identity.Caller{Principal: "bob"}))
	fmt.Println(reg.CancelTask(ctx, task.ID, ann))
	t, _ := reg.Task(ctx, task.ID, ann)
	for !t.Status.Terminal() {
		time.Sleep(time.Millisecond)
		t, _ = reg.Task(ctx, task.ID, ann)
	}
	fmt.Println(t.Status)
	// Output:
	// actions: task not found
	// <nil>
	// cancelled
}
