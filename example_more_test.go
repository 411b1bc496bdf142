package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

func ExampleCompileParameters() {
	ps, err := actions.CompileParameters(plantSchema, actions.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	checked, err := ps.Check(context.Background(), `{"species":"rose"}`, nil)
	fmt.Println(checked, err)
	_, err = ps.Check(context.Background(), `{"species":"","extra":1}`, nil)
	fmt.Println(err)
	_, err = actions.CompileParameters(`{"type":"object","properties":{"a":{"maxlength":3}}}`, actions.Limits{})
	fmt.Println(err)
	// Output:
	// map[count:1 species:rose] <nil>
	// invalid_parameters: the parameters break the schema: /extra is not allowed; /species must be at least 1 character long
	// constraint_violation: invalid parameters schema: /properties/a/maxlength unknown keyword (JSON Schema 2020-12 keywords and ref only)
}

func ExampleDecodeManifest() {
	defs, err := actions.DecodeManifest([]byte(`[
		{"id": "garden/plant", "title": "Plant", "parameters": {"type": "object"}},
		{"id": "garden/water", "kind": "action", "parameters": "{\"type\":\"object\"}"}
	]`))
	fmt.Println(len(defs), defs[0].ID, defs[1].ID, err)
	_, err = actions.DecodeManifest([]byte(`[{"id": "garden/plant", "kind": "write"}]`))
	fmt.Println(err)
	// Output:
	// 2 garden/plant garden/water <nil>
	// actions: definition "garden/plant": kind must be "read" or "action"
}

func ExampleRegistry_DecodeBatch() {
	reg := actions.NewRegistry(nil)
	b, err := reg.DecodeBatch([]byte(`{"commands": [
		{"call": "garden/plant", "with": {"species": "rose"}, "as": "p"},
		{"call": "garden/water", "with": {"plant": "${p.key}"}}
	]}`))
	fmt.Println(len(b.Steps), err)
	_, err = reg.DecodeBatch([]byte(`{"commands": [{"call": "garden/plant", "when": "${x}"}]}`))
	fmt.Println(errors.Is(err, codes.InvalidScriptStep), err)
	_, err = reg.DecodeBatch([]byte(`{"commands": [{"call": "garden/water", "with": {"plant": "${p.key}"}}]}`))
	fmt.Println(errors.Is(err, codes.UnknownReference), err)
	// Output:
	// 2 <nil>
	// true invalid_script_step: the batch cannot run as it is: /commands/0/when a condition (when) is run by the engine's script runner; a batch step holds only call, with and as
	// true unknown_reference: a placeholder names a result that no earlier step sets: /commands/0/with/plant no step of the batch is named p
}

func ExamplePolicyOf() {
	for _, c := range []codes.Code{codes.InvalidParameters, codes.UnknownAction, codes.Internal, codes.Cancelled, "out_of_stock"} {
		p := codes.PolicyOf(c)
		fmt.Println(c, p.Transport, p.Retry)
	}
	// Output:
	// invalid_parameters tool-result after-edit
	// unknown_action protocol never
	// internal protocol after-backoff
	// cancelled protocol after-backoff
	// out_of_stock tool-result never
}

func ExampleNewRefusal() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "shop/order"},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			r := actions.NewRefusal("out_of_stock", "the item is out of stock")
			r.Retry = codes.RetryAfterBackoff
			r.NextAction = "Offer another size."
			return nil, r
		},
	})
	res, err := reg.Run(context.Background(), actions.Call{Action: "shop/order"})
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code, r.Transport, r.Retry, r.NextAction)
	}
	fmt.Println(res.Entry().Outcome, res.Entry().Error)
	// Output:
	// out_of_stock tool-result after-backoff Offer another size.
	// refused out_of_stock
}

func ExampleActionID() {
	id, err := actions.ActionID(actions.ToolName("garden/plant"))
	fmt.Println(id, err)
	_, err = actions.ActionID("plant")
	fmt.Println(errors.Is(err, codes.UnknownAction))
	// Output:
	// garden/plant <nil>
	// true
}

func ExampleNew() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "garden/purge", Effect: actions.EffectDelete},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "purged", nil }))
	tools, _ := reg.Tools(nil)
	out, _ := json.Marshal(tools[0])
	fmt.Println(string(out))
	// Output:
	// {"name":"garden-purge","inputSchema":{"additionalProperties":false,"properties":{},"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false}}
}

func ExampleToolOptions() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/rename", Parameters: `{"type":"object","properties":{
		"name":{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"string"}}]}}}`},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	tools, err := reg.Tools(&actions.ToolOptions{Languages: []string{"en", "fr"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tools[0].InputSchema["properties"].(map[string]any)["name"].(map[string]any)["description"])
	// Output:
	// Localized text in en, fr: a string, or an object from language to string; the source language is en.
}

func ExampleRegistry_MustRegister() {
	reg := actions.NewRegistry(nil)
	defer func() { fmt.Println("panic:", recover()) }()
	reg.MustRegister(actions.New(actions.Definition{ID: "no-slash"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	// Output:
	// panic: constraint_violation: invalid action id: /id the id must be namespace/name with one slash
}

func ExampleRegistry_Register() {
	reg := actions.NewRegistry(nil)
	body := func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }
	// All or none: the second action's schema is refused, so neither is
	// registered.
	err := reg.Register(
		actions.New(actions.Definition{ID: "garden/plant"}, body),
		actions.New(actions.Definition{ID: "garden/water", Parameters: `{"type":"array"}`}, body),
	)
	fmt.Println(err)
	fmt.Println(len(reg.Definitions()))
	// Output:
	// constraint_violation: the actions are not registered: /1/parameters/type the root must be "type": "object"
	// 0
}

func ExampleNewTrace() {
	// A body tested on its own: no registry, no host.
	body := func(_ context.Context, p map[string]any, t *actions.Trace) (any, error) {
		return nil, t.Command(map[string]any{"op": "water", "plant": p["plant"]}, nil)
	}
	t := actions.NewTrace("garden/water")
	_, err := body(context.Background(), map[string]any{"plant": "rose"}, t)
	fmt.Println(err, string(t.Steps()[0].Command))
	// Output:
	// <nil> {"op":"water","plant":"rose"}
}

func ExampleRegistry_Tools() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(plantAction())
	tools, err := reg.Tools(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name, t.Annotations.ReadOnlyHint, t.Annotations.DestructiveHint, t.InputSchema["required"])
	}
	// Output:
	// garden-plant false false [species]
}

func ExampleNewRegistry() {
	// A body reaches the host's services through its closure, and who
	// calls through its trace.
	greeting := "hello"
	reg := actions.NewRegistry(&actions.Options{Limits: actions.Limits{MaxParamBytes: 64}})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/greet", Effect: actions.EffectRead},
		func(_ context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			user := "the host"
			if c := t.Caller(); c != nil {
				user = c.Principal
			}
			return greeting + " " + user + " from " + t.Action(), nil
		}))
	res, err := reg.Run(context.Background(), actions.Call{Action: "shop/greet", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}})
	fmt.Println(res.Value, err)

	_, err = reg.Run(context.Background(), actions.Call{Action: "shop/greet", Params: `{"note":"` + strings.Repeat("x", 100) + `"}`})
	fmt.Println(err)
	fmt.Println(reg.Limits().MaxParamBytes, reg.Limits().MaxParamDepth)
	// Output:
	// hello ann from shop/greet <nil>
	// invalid_parameters: the parameters are too large: the parameters are larger than 64 bytes
	// 64 64
}

func ExampleTrace_Command() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "garden/water"},
		Run: func(_ context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			err := t.Command(map[string]any{"op": "update", "at": "${now()}"}, map[string]any{"updated": 1})
			return nil, err
		},
	})
	res, _ := reg.Run(context.Background(), actions.Call{Action: "garden/water"})
	step := res.Entry().Steps[0]
	fmt.Println(string(step.Command), step.Result)
	// Output:
	// {"at":"${now()}","op":"update"} {"updated":1}
}
