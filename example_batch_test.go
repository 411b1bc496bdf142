package actions_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

// A batch is one call: Run runs its steps one after the other in one unit
// of the registry's Store, and gives the batch's result with one record
// per call made.
func ExampleRegistry_Run_batch() {
	log := actions.NewRunLog()
	reg := actions.NewRegistry(&actions.Options{Store: log})
	err := reg.Register(actions.Action{
		Definition: actions.Definition{
			ID: "scflow/create_actor",
			Parameters: `{"type": "object", "required": ["display_name"],
				"properties": {"display_name": {"type": "string"}, "type": {"type": "string"}}}`,
		},
		Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"id": "actor-7", "display_name": p["display_name"]}, nil
		},
	})
	if err == nil {
		err = reg.Register(actions.Action{
			Definition: actions.Definition{
				ID: "carbon/update_actor_emissions",
				Parameters: `{"type": "object", "required": ["id", "co2"],
					"properties": {"id": {"type": "string"}, "co2": {"type": "number"}, "note": {"type": "string"}}}`,
			},
			Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return map[string]any{"updated": p["id"]}, nil
			},
		})
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	batch, err := reg.DecodeBatch([]byte(`{
		"commands": [
			{"call": "scflow/create_actor", "with": {"display_name": "Plant", "type": "plant"}, "as": "plant"},
			{"call": "carbon/update_actor_emissions",
			 "with": {"id": "${plant.id}", "co2": 12, "note": "set ${now()} for ${plant.display_name}"}}
		],
		"result": "${plant}"
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}

	// A store that keeps a database (sqlstore.Store) runs the batch in
	// one transaction, undone when a step is refused.
	res, err := reg.Run(context.Background(), actions.Call{Batch: &batch})
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := actions.CanonicalJSON(res.Value)
	fmt.Println("result:", string(text))
	for _, rec := range res.Records {
		fmt.Println(rec.Entry.Action, rec.Entry.Outcome, rec.Entry.Parameters, rec.Audit.Batch)
	}
	fmt.Println("logged:", len(log.Records()))

	// A placeholder naming a result no earlier step sets is refused before
	// any call.
	_, err = reg.DecodeBatch([]byte(`{"commands": [{"call": "carbon/update_actor_emissions", "with": {"id": "${plant.id}", "co2": 1}}]}`))
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code, r.Issues[0].Path)
	}
	// Output:
	// result: {"display_name":"Plant","id":"actor-7"}
	// scflow/create_actor done {"display_name":"Plant","type":"plant"} true
	// carbon/update_actor_emissions done {"co2":12,"id":"actor-7","note":"set ${now()} for Plant"} true
	// logged: 2
	// unknown_reference /commands/0/with/id
}

// A batch holding a step that needs confirmation is held whole, before
// any step runs: one receipt names every held step, and confirming runs
// the whole batch once.
func ExampleRegistry_Decide_batch() {
	reg := gatedShop(nil)
	ctx := context.Background()
	batch, err := reg.DecodeBatch([]byte(`{"commands": [
		{"call": "shop/restock"},
		{"call": "shop/discard", "with": {"item": "milk"}, "as": "gone"}
	], "result": "${gone}"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := reg.Run(ctx, actions.Call{Batch: &batch, Caller: editor})
	var r *actions.Refusal
	if !errors.As(err, &r) || r.Pending == nil {
		fmt.Println("not held:", err)
		return
	}
	fmt.Println(r.Code, r.Pending.Steps, len(res.Records))

	// The person confirms on the host's own screen (surface ui).
	onScreen := &identity.Caller{Principal: editor.Principal, Capabilities: editor.Capabilities, Surface: identity.SurfaceUI}
	res, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: onScreen})
	fmt.Println(res.Value, err)
	for _, rec := range res.Records {
		fmt.Println(rec.Entry.Action, rec.Entry.Outcome, rec.Audit.Stage, rec.Audit.Batch)
	}
	// Output:
	// confirmation_required [{1 shop/discard}] 2
	// discarded milk <nil>
	// shop/restock done confirmed true
	// shop/discard done confirmed true
}
