package actions_test

import (
	"fmt"
	"time"

	"github.com/actionreg/actions"
)

// A held call's answer under a key lasts no longer than its pending
// change: a store writes UnitKey.Until, not the key's whole window.
func ExampleUnitKey_Until() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	k := actions.UnitKey{Key: "refund-1", Now: now, Expires: now.Add(24 * time.Hour)}

	done := actions.Answer{Value: `{"refunded":4}`}
	fmt.Println(k.Until(done).Sub(now))

	held := actions.NewRefusal(actions.CodeConfirmationRequired, "a person must confirm")
	held.Pending = &actions.Receipt{ID: "c1", Action: "shop/refund", Expires: now.Add(time.Hour)}
	fmt.Println(k.Until(actions.Answer{Refusal: held}).Sub(now))
	// Output:
	// 24h0m0s
	// 1h0m0s
}
