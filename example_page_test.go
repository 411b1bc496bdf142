package actions_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

// A keyset page: the body reads the rows after the key the cursor stands
// for, one more than a page, and PageAfter keeps a page and its next key.
// The caller gets that key as an opaque cursor, which only this call,
// made again by the same principal, may send back.
func ExamplePageAfter() {
	ids := []string{"a1", "a2", "a3", "a4", "a5"} // a table, ordered by id
	reg := actions.NewRegistry(&actions.Options{CursorKey: []byte("the host's secret")})
	reg.MustRegister(actions.New(actions.Definition{ID: "t/list", PageKey: "id",
		Parameters: `{"type":"object","properties":{"cursor":` + actions.CursorSchema + `}}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			after, _ := p["cursor"].(string) // "" on the first page, else the last id given
			var rows []map[string]any
			for _, id := range ids {
				if id > after && len(rows) < 3 { // WHERE id > ? ORDER BY id LIMIT 2+1
					rows = append(rows, map[string]any{"id": id})
				}
			}
			return actions.PageAfter(rows, 2, func(r map[string]any) string { return r["id"].(string) }), nil
		}))
	caller := &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
	params := map[string]any{}
	for {
		res, err := reg.Run(context.Background(), actions.Call{Action: "t/list", Params: params, Caller: caller})
		if err != nil {
			fmt.Println(err)
			return
		}
		page := res.Value.(actions.Page[map[string]any])
		fmt.Println(page.Items, "more:", page.Next != "", "a token:", !strings.HasPrefix(page.Next, "a"))
		if page.Next == "" {
			break
		}
		params = map[string]any{"cursor": page.Next}
	}
	_, err := reg.Run(context.Background(), actions.Call{Action: "t/list", Params: map[string]any{"cursor": "a2"}, Caller: caller})
	fmt.Println(actions.CodeOf(err))
	// Output:
	// [map[id:a1] map[id:a2]] more: true a token: true
	// [map[id:a3] map[id:a4]] more: true a token: true
	// [map[id:a5]] more: false a token: true
	// invalid_parameters
}
