package programs_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/programs"
)

// A program written against the declarations of package declare: it
// lists the actors and reads each one, every call a nested call made as
// the caller through the registry's gate, the whole program one call.
func ExampleAction() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "supply/list_actors", Effect: actions.EffectRead},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"items": []any{map[string]any{"id": "a1"}, map[string]any{"id": "a2"}}}, nil
			}),
		actions.New(actions.Definition{ID: "supply/get_actor", Effect: actions.EffectRead,
			Parameters: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return map[string]any{"id": p["id"], "open": p["id"] == "a2"}, nil
			}),
		programs.Action(reg, nil),
	)
	caller := &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}
	res, err := reg.Run(context.Background(), actions.Call{Action: programs.DefaultID, Caller: caller,
		Params: map[string]any{"program": `
			const open = [];
			for (const a of (await supply.list_actors({})).items) {
				if ((await supply.get_actor({id: a.id})).open) open.push(a.id);
			}
			return open;
		`}})
	fmt.Println(res.Text, len(res.Entry().Steps), err)

	// A program that never ends is stopped at its time bound (2 s of
	// the engine's time by default).
	_, err = reg.Run(context.Background(), actions.Call{Action: programs.DefaultID, Caller: caller,
		Params: map[string]any{"program": `for (;;) {}`}})
	fmt.Println(errors.Is(err, programs.CodeTimeLimit), err)
	// Output:
	// ["a2"] 3 <nil>
	// true program_time_limit: the program ran past its time limit of 2s
}
