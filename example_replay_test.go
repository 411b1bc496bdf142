package actions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
)

func ExampleRegistry_Replay() {
	ctx := context.Background()
	reg := actions.NewRegistry[*actions.Trace](nil)
	_ = reg.Register(plantAction())

	// Record a call to a log, then read the entry back as a host would.
	var log bytes.Buffer
	w := actions.NewEntryWriter(&log)
	_, _, _ = reg.Run(ctx, "garden/plant", map[string]any{"species": "rose"}, &actions.Host[*actions.Trace]{OnEntry: w.Record})
	var entry actions.RunEntry
	_ = json.Unmarshal(log.Bytes(), &entry)

	// The same code replays the entry step for step.
	_, err := reg.Replay(ctx, entry, nil)
	fmt.Println(err)

	// A new release whose body answers with another key departs from it.
	next := actions.NewRegistry[*actions.Trace](nil)
	a := plantAction()
	a.Run = func(ctx context.Context, p map[string]any, t *actions.Trace) (any, error) {
		cmd := map[string]any{"op": "create", "schema": "plant", "values": p, "at": "${now()}"}
		_ = t.Command(cmd, map[string]any{"key": "plant:2"})
		return map[string]any{"key": "plant:2", "count": p["count"]}, nil
	}
	_ = next.Register(a)
	_, err = next.Replay(ctx, entry, nil)
	var d *actions.Divergence
	if errors.As(err, &d) {
		fmt.Println(d.Path, d.Want, d.Got)
	}
	// Output:
	// <nil>
	// /steps/0/result {"key":"plant:1"} {"key":"plant:2"}
}
