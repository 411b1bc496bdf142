package actions_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// plantParams are the parameters of garden/plant as a Go type. The tags
// are those the official MCP Go SDK reads: json for names and
// optionality, jsonschema for descriptions.
type plantParams struct {
	Species string    `json:"species" jsonschema:"the plant's species"`
	Count   int8      `json:"count,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

type plantResult struct {
	Key   string `json:"key"`
	Count int8   `json:"count"`
}

// A typed action: the parameters schema is inferred from the Go type, the
// body receives a plantParams and returns a plantResult, whose own schema
// becomes the action's output schema.
func ExampleTyped() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.Typed(actions.Definition{ID: "garden/plant"},
		func(_ context.Context, p plantParams, _ *actions.Trace) (plantResult, error) {
			return plantResult{Key: "plant:1", Count: p.Count}, nil
		}))
	def := reg.Definitions()[0]
	in, _ := actions.CanonicalJSON(def.Parameters)
	out, _ := actions.CanonicalJSON(def.OutputSchema)
	fmt.Println(string(in))
	fmt.Println(string(out))

	// 1e2 is an integer: it fits the int8 field as 100.
	res, err := reg.Run(context.Background(), actions.Call{Action: "garden/plant", Params: `{"species": "rose", "count": 1e2}`})
	fmt.Printf("%+v %v\n", res.Value, err)
	fmt.Println(res.Entry().Result)

	// 300 does not fit an int8: the inferred schema bounds it.
	_, err = reg.Run(context.Background(), actions.Call{Action: "garden/plant", Params: `{"species": "rose", "count": 300}`})
	fmt.Println(err)
	// Output:
	// {"additionalProperties":false,"properties":{"at":{"type":"string"},"count":{"maximum":127,"minimum":-128,"type":"integer"},"species":{"description":"the plant's species","type":"string"}},"required":["species"],"type":"object"}
	// {"additionalProperties":false,"properties":{"count":{"maximum":127,"minimum":-128,"type":"integer"},"key":{"type":"string"}},"required":["key","count"],"type":"object"}
	// {Key:plant:1 Count:100} <nil>
	// {"count":100,"key":"plant:1"}
	// invalid_parameters: the parameters break the schema: /count must be <= 127
}

type orderParams struct {
	Customer string `json:"customer" actions:"ref=customer"`
	Size     string `json:"size"`
	Qty      int    `json:"qty"`
}

// A typed action with a given schema, for what tags cannot say (a
// default, an enum, a ref with its resolver): Register checks that the
// schema and the Go type agree, and refuses drift with the pointer and
// the field.
func ExampleTyped_givenSchema() {
	body := func(_ context.Context, p orderParams, _ *actions.Trace) (string, error) {
		return fmt.Sprintf("%d %s for %s", p.Qty, p.Size, p.Customer), nil
	}
	resolve := func(_ context.Context, schema, value string) (actions.RefMatches, error) {
		if value == "Ada Lovelace" {
			return actions.RefMatches{Names: []string{"customer:7"}}, nil
		}
		return actions.RefMatches{}, nil
	}
	reg := actions.NewRegistry(&actions.Options{Resolve: resolve})
	reg.MustRegister(actions.Typed(actions.Definition{ID: "shop/order", Parameters: `{
		"type": "object", "required": ["customer"], "additionalProperties": false,
		"properties": {
			"customer": {"type": "string", "ref": "customer"},
			"size": {"enum": ["S", "M", "L"], "default": "M"},
			"qty": {"type": "integer", "minimum": 1, "default": 1}}}`}, body))
	res, err := reg.Run(context.Background(), actions.Call{Action: "shop/order", Params: `{"customer": "Ada Lovelace"}`})
	fmt.Println(res.Value, err)

	// The same Go type with a schema that drifted from it.
	err = reg.Register(actions.Typed(actions.Definition{ID: "shop/order2", Parameters: `{
		"type": "object", "required": ["customer", "note"],
		"properties": {"customer": {"type": "string", "ref": "customer"}, "size": {"type": "string"}, "qty": {"type": "number"}}}`}, body))
	var r *actions.Refusal
	if errors.As(err, &r) {
		for _, is := range r.Issues {
			fmt.Println(is.Path, is.Message)
		}
	}
	// Output:
	// 1 M for customer:7 <nil>
	// /parameters/properties/qty/type the schema allows number, which field orderParams.Qty (int) cannot hold
	// /parameters/required/1 the required property note has no field in actions_test.orderParams
}

// An output contract on an untyped action: a result that breaks it never
// reaches the caller. The output_invalid refusal's issues, pointing into
// the result, are for the host.
func ExampleDefinition_outputSchema() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{
		ID:           "stock/count",
		OutputSchema: `{"type": "object", "required": ["items"], "properties": {"items": {"type": "integer", "minimum": 0}}}`,
	}, func(context.Context, map[string]any, *actions.Trace) (any, error) {
		return map[string]any{"items": -1}, nil
	}))
	res, err := reg.Run(context.Background(), actions.Call{Action: "stock/count"})
	fmt.Println(res.Value, res.Entry().Outcome, res.Entry().Error)
	fmt.Println(errors.Is(err, codes.OutputInvalid), codes.PolicyOf(codes.OutputInvalid))
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Issues)
	}
	// Output:
	// <nil> refused output_invalid
	// true {protocol never}
	// [{/items minimum must be >= 0}]
}
