package codes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// A connector reads how to deliver a refusal, and whether a retry can
// work, from its code.
func ExamplePolicyOf() {
	for _, c := range []codes.Code{codes.InvalidParameters, codes.UnknownAction, codes.Timeout, "tank_empty"} {
		p := codes.PolicyOf(c)
		fmt.Printf("%s: %s, retry %s\n", c, p.Transport, p.Retry)
	}
	// Output:
	// invalid_parameters: tool-result, retry after-edit
	// unknown_action: protocol, retry never
	// timeout: tool-result, retry after-backoff
	// tank_empty: tool-result, retry never
}

// A refusal from a registry matches its code with errors.Is, wrapped or
// not, and no other code; a body's own code matches the same way.
func Example() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{
		ID:         "tank/fill",
		Parameters: `{"type":"object","properties":{"litres":{"type":"integer","minimum":1}},"required":["litres"]}`,
	}, func(context.Context, map[string]any, *actions.Trace) (any, error) {
		return nil, codes.Code("tank_empty")
	}))

	_, err := reg.Run(context.Background(), actions.Call{Action: "tank/fill", Params: `{"litres":0}`})
	err = fmt.Errorf("filling: %w", err)
	fmt.Println(errors.Is(err, codes.InvalidParameters), errors.Is(err, codes.UnknownAction))

	_, err = reg.Run(context.Background(), actions.Call{Action: "tank/fill", Params: `{"litres":5}`})
	fmt.Println(errors.Is(err, codes.Code("tank_empty")), actions.CodeOf(err))
	// Output:
	// true false
	// true tank_empty
}
