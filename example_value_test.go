package actions_test

import (
	"context"
	"fmt"

	"github.com/actionreg/actions"
)

// A body draws its new row's number through the trace, so that a replay
// gives it back instead of drawing another.
func ExampleTrace_Value() {
	next := int64(41) // a database sequence, say
	open := func() *actions.Registry {
		reg := actions.NewRegistry(nil)
		reg.MustRegister(actions.New(actions.Definition{ID: "desk/open"},
			func(_ context.Context, _ map[string]any, t *actions.Trace) (any, error) {
				id, err := t.Value("ticket", func() (any, error) { next++; return next, nil })
				return map[string]any{"ticket": id}, err
			}))
		return reg
	}
	res, _ := open().Run(context.Background(), actions.Call{Action: "desk/open"})
	fmt.Println(res.Text)
	next = 500 // another replica, its sequence elsewhere
	entry, err := open().Replay(context.Background(), res.Records[0])
	fmt.Println(entry.Result, err, next)
	// Output:
	// {"ticket":42}
	// {"ticket":42} <nil> 500
}
