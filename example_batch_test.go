package actions_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
)

func ExampleRegistry_RunBatch() {
	reg := actions.NewRegistry[*actions.Trace](nil)
	err := reg.Register(actions.Action[*actions.Trace]{
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
		err = reg.Register(actions.Action[*actions.Trace]{
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

	// The host opens one transaction around the batch and rolls it back
	// when RunBatch returns an error.
	log := actions.NewRunLog()
	result, entries, err := reg.RunBatch(context.Background(), batch,
		&actions.Host[*actions.Trace]{OnEntry: log.Record})
	if err != nil {
		fmt.Println(err) // the host rolls its transaction back
		return
	}
	text, _ := actions.CanonicalJSON(result)
	fmt.Println("result:", string(text))
	for _, e := range entries {
		fmt.Println(e.Action, e.Outcome, e.Parameters)
	}
	fmt.Println("logged:", len(log.Entries()))

	// A placeholder naming a result no earlier step sets is refused before
	// any call.
	_, err = reg.DecodeBatch([]byte(`{"commands": [{"call": "carbon/update_actor_emissions", "with": {"id": "${plant.id}", "co2": 1}}]}`))
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code, r.Issues[0].Path)
	}
	// Output:
	// result: {"display_name":"Plant","id":"actor-7"}
	// scflow/create_actor done {"display_name":"Plant","type":"plant"}
	// carbon/update_actor_emissions done {"co2":12,"id":"actor-7","note":"set ${now()} for Plant"}
	// logged: 2
	// unknown_reference /commands/0/with/id
}
