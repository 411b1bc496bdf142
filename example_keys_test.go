package actions_test

import (
	"context"
	"fmt"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/store"
)

// A call that carries an idempotency key runs at most once: the retry
// gets the first call's answer. The registry runs the protocol over its
// Store's KeyStore methods; the store keeps the key's row, which
// ClaimKey shows to the next claim.
func ExampleKeyStore() {
	ctx := context.Background()
	log := actions.NewRunLog() // a KeyStore, in this process's memory
	reg := actions.NewRegistry(&actions.Options{Store: log})
	charges := 0
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge",
		Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}}}`},
		func(context.Context, map[string]any, *actions.Trace) (any, error) {
			charges++
			return map[string]any{"charged": charges}, nil
		}))

	call := actions.Call{Action: "shop/charge", Params: `{"amount":4}`, IdempotencyKey: "order-17"}
	for range 2 {
		res, err := reg.Run(ctx, call)
		fmt.Println(res.Text, err)
	}
	fmt.Println("charges:", charges)

	// The row under the key, as a store keeps it for the registry.
	var ks store.KeyStore = log
	row, err := ks.ClaimKey(ctx, store.KeyRecord{Action: "shop/charge", Key: "order-17", Unit: "another claim"}, time.Now())
	fmt.Println(row.Unit, string(row.Answer), len(row.Records), err)
	// Output:
	// {"charged":1} <nil>
	// {"charged":1} <nil>
	// charges: 1
	// runlog:1 {"value":"{\"charged\":1}"} 1 <nil>
}
