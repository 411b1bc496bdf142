package actions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

func ExampleRegistry_Replay() {
	ctx := context.Background()
	// Record a call to a log, then read the record back as a host would.
	var log bytes.Buffer
	w := actions.NewEntryWriter(&log)
	reg := actions.NewRegistry(&actions.Options{OnRecord: w.Write})
	_ = reg.Register(plantAction())
	_, _ = reg.Run(ctx, actions.Call{Action: "garden/plant", Params: map[string]any{"species": "rose"}})
	var rec store.Record
	_ = json.Unmarshal(log.Bytes(), &rec)

	// The same code replays the record step for step.
	_, err := reg.Replay(ctx, rec)
	fmt.Println(err)

	// A new release whose body answers with another key departs from it.
	next := actions.NewRegistry(nil)
	a := plantAction()
	a.Run = func(ctx context.Context, p map[string]any, t *actions.Trace) (any, error) {
		cmd := map[string]any{"op": "create", "schema": "plant", "values": p, "at": "${now()}"}
		_ = t.Command(cmd, map[string]any{"key": "plant:2"})
		return map[string]any{"key": "plant:2", "count": p["count"]}, nil
	}
	_ = next.Register(a)
	_, err = next.Replay(ctx, rec)
	var d *actions.Divergence
	if errors.As(err, &d) {
		fmt.Println(d.Path, d.Want, d.Got)
		fmt.Println(errors.Is(err, codes.Diverged), actions.CodeOf(err), d.Reason())
	}
	// Output:
	// <nil>
	// /steps/0/result {"key":"plant:1"} {"key":"plant:2"}
	// true diverged the body does otherwise today
}

// A record replays with the caller it records, through today's gate: a
// call held for confirmation replays as held (no body runs, nothing is
// held again), and a decision today's policy takes otherwise is a
// divergence that names its cause.
func ExampleRegistry_Replay_held() {
	ctx := context.Background()
	log := actions.NewRunLog()
	reg := gatedShopWith(&actions.Options{Store: log})
	_, err := reg.Run(ctx, actions.Call{Action: "shop/discard", Params: `{"item":"milk"}`, Caller: editor})
	fmt.Println(actions.CodeOf(err))
	held := log.Records()[0]
	fmt.Println(held.Audit.Stage, held.Entry.Error)

	_, err = reg.Replay(ctx, held)
	fmt.Println(err)

	// Today the editor lost the capability the action needs.
	demoted := held
	c := *editor
	c.Capabilities = []string{"stock.read"}
	demoted.Audit.Caller = &c
	_, err = reg.Replay(ctx, demoted)
	var d *actions.Divergence
	if errors.As(err, &d) {
		fmt.Println(d.Path, d.Want, d.Got, d.Code)
		fmt.Println(d.Reason())
	}
	// Output:
	// confirmation_required
	// held confirmation_required
	// <nil>
	// /error confirmation_required forbidden_capability forbidden_capability
	// today's policy decides otherwise (forbidden_capability)
}
