package actions_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
)

// Calls that the host's code decides one after the other, kept together
// or not at all: a refused call undoes the unit, here with no store
// (the records say rolled back).
func ExampleRegistry_RunUnit() {
	reg := gatedShop(nil)
	ctx := context.Background()
	res, err := reg.RunUnit(ctx, editor, func(ctx context.Context, call actions.UnitCall) (any, error) {
		stock, err := call("shop/stock", nil)
		if err != nil {
			return nil, err
		}
		if stock.Value.(map[string]any)["apples"].(int) < 5 {
			if _, err := call("shop/restock", nil); err != nil {
				return nil, err
			}
		}
		return "checked", nil
	})
	fmt.Println(res.Text, err, len(res.Records), res.Records[1].RolledBack)

	// A viewer may read but not restock: the whole unit is refused.
	res, err = reg.RunUnit(ctx, viewer, func(ctx context.Context, call actions.UnitCall) (any, error) {
		call("shop/stock", nil)
		call("shop/restock", nil) // refused; the unit is undone even if fn goes on
		return "went on", nil
	})
	fmt.Println(res.Value, errors.Is(err, actions.CodeUnknownAction), res.Records[0].RolledBack)

	// A call that needs confirmation is refused: a unit's calls cannot be
	// confirmed one by one.
	_, err = reg.RunUnit(ctx, editor, func(ctx context.Context, call actions.UnitCall) (any, error) {
		return call("shop/discard", map[string]any{"item": "milk"})
	})
	var r *actions.Refusal
	fmt.Println(errors.As(err, &r), r.Code, r.Pending == nil || r.Pending.ID == "")
	// Output:
	// "checked" <nil> 2 false
	// <nil> true true
	// true confirmation_required true
}
