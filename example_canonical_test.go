package actions_test

import (
	"encoding/json"
	"fmt"

	"github.com/actionreg/actions"
)

func ExampleCanonicalJSON() {
	entry := map[string]any{
		"title":  "Café <menu>",
		"amount": json.Number("1.50E+2"),
		"ratio":  1e-7,
		"tags":   []any{"b", "a"},
		"\u00e9": true, // é sorts after every ASCII name
		"id":     "a1",
	}
	out, err := actions.CanonicalJSON(entry)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))

	_, err = actions.CanonicalJSON(json.RawMessage(`{"a":1,"a":2}`))
	fmt.Println(err)
	// Output:
	// {"amount":150,"id":"a1","ratio":1e-7,"tags":["b","a"],"title":"Café <menu>","é":true}
	// actions: canonical json: duplicate member name at "/a"
}
