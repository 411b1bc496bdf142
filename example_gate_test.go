package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// gatedShop is a registry with three gated actions: a read, an additive
// write and a delete that needs a person's confirmation.
func gatedShop(gate *actions.GateOptions) *actions.Registry {
	return gatedShopWith(&actions.Options{Gate: gate})
}

// gatedShopWith is gatedShop with the registry's options.
func gatedShopWith(opts *actions.Options) *actions.Registry {
	reg := actions.NewRegistry(opts)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/stock", Effect: actions.EffectRead, Capability: "stock.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"apples": 3}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "restocked", nil }),
		actions.New(actions.Definition{ID: "shop/discard", Effect: actions.EffectDelete, Capability: "stock.write", NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return "discarded " + p["item"].(string), nil
			}),
	)
	return reg
}

var (
	viewer = &identity.Caller{Principal: "vera", Capabilities: []string{"stock.read"}, Surface: identity.SurfaceMCP}
	editor = &identity.Caller{Principal: "eddie", Capabilities: []string{"stock.read", "stock.write"}, Surface: identity.SurfaceMCP}
)

func ExampleCaller() {
	reg := gatedShop(nil)
	ctx := context.Background()
	res, err := reg.Run(ctx, actions.Call{Action: "shop/stock", Caller: viewer})
	fmt.Println(res.Value, err)
	// A caller who may not call an action is told it does not exist, and
	// nothing more; the record tells the host why.
	res, err = reg.Run(ctx, actions.Call{Action: "shop/restock", Params: `{"anything": "at all"}`, Caller: viewer})
	fmt.Println(err)
	fmt.Println(errors.Is(err, codes.UnknownAction), errors.Is(err, codes.ForbiddenCapability))
	rec := res.Records[0]
	fmt.Println(rec.Entry.Error, rec.Audit.Code, rec.Audit.Caller.Principal)
	// Output:
	// map[apples:3] <nil>
	// unknown_action: no action is registered under this id
	// true false
	// forbidden_capability forbidden_capability vera
}

func ExampleRegistry_Admit() {
	reg := gatedShop(&actions.GateOptions{ResourceMetadata: "https://shop.example/.well-known/oauth-protected-resource"})
	withReadToken := *editor
	withReadToken.Token, withReadToken.Scopes = true, []string{"mcp:read"}
	err := reg.Admit(context.Background(), "shop/restock", &withReadToken)
	var r *actions.Refusal
	if errors.As(err, &r) {
		fmt.Println(r.Code, r.Scopes)
		fmt.Println(r.Challenge)
	}
	// Output:
	// insufficient_scope [mcp:write]
	// Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="https://shop.example/.well-known/oauth-protected-resource"
}

func ExampleRegistry_Decide() {
	reg := gatedShop(nil)
	ctx := context.Background()
	_, err := reg.Run(ctx, actions.Call{Action: "shop/discard", Params: `{"item":"milk"}`, Caller: editor})
	var r *actions.Refusal
	if !errors.As(err, &r) || r.Pending == nil {
		fmt.Println("not held:", err)
		return
	}
	fmt.Println(r.Code, r.Pending.Action)

	// Later, on the host's own screen, the same person confirms: every
	// check is made again, as that person, and the body runs once.
	onScreen := &identity.Caller{Principal: "eddie", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI}
	res, err := reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: onScreen})
	fmt.Println(res.Value, err)
	rec := res.Records[0]
	fmt.Println("audit:", rec.Entry.Action, rec.Entry.Outcome, rec.Audit.Stage, rec.Audit.PendingChange == r.Pending.ID)

	// A change runs once.
	_, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: onScreen})
	fmt.Println(err)
	// Output:
	// confirmation_required shop/discard
	// discarded milk <nil>
	// audit: shop/discard done confirmed true
	// unknown_change: no pending change of this caller has this id
}

func ExampleRegistry_Decide_reject() {
	reg := gatedShop(nil)
	ctx := context.Background()
	_, err := reg.Run(ctx, actions.Call{Action: "shop/discard", Params: `{"item":"eggs"}`, Caller: editor})
	var r *actions.Refusal
	errors.As(err, &r)

	// Rejecting, on the host's own screen, runs nothing, and records
	// the held call as rejected.
	onScreen := &identity.Caller{Principal: "eddie", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI}
	res, err := reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: false, Caller: onScreen})
	fmt.Println(res.Value, err)
	rec := res.Records[0]
	fmt.Println(rec.Entry.Action, rec.Entry.Outcome, rec.Entry.Error, rec.Audit.Stage)

	_, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: onScreen})
	fmt.Println(err)
	// Output:
	// <nil> <nil>
	// shop/discard refused rejected rejected
	// unknown_change: no pending change of this caller has this id
}

func ExampleRegistry_PendingChange() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reg := gatedShopWith(&actions.Options{Now: func() time.Time { return now }, Gate: &actions.GateOptions{PendingFor: 24 * time.Hour}})
	_, err := reg.Run(context.Background(), actions.Call{Action: "shop/discard", Params: `{"item": "bread"}`, Caller: editor})
	var r *actions.Refusal
	errors.As(err, &r)
	pc, err := reg.PendingChange(context.Background(), r.Pending.ID, editor)
	fmt.Println(pc.Action, pc.Parameters, pc.Proposer.Principal, pc.Expires, err)
	_, err = reg.PendingChange(context.Background(), r.Pending.ID, viewer)
	fmt.Println(err)
	// Output:
	// shop/discard {"item":"bread"} eddie 2026-12-02 09:00:00 +0000 UTC <nil>
	// unknown_change: no pending change of this caller has this id
}

// A screen lists what a person has waiting for their decision, newest
// first; nobody else sees those changes.
func ExampleRegistry_PendingChanges() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reg := gatedShopWith(&actions.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	for _, item := range []string{"bread", "jam"} {
		_, _ = reg.Run(ctx, actions.Call{Action: "shop/discard", Params: map[string]any{"item": item}, Caller: editor})
		now = now.Add(time.Minute)
	}
	changes, err := reg.PendingChanges(ctx, editor)
	for _, pc := range changes {
		fmt.Println(pc.Action, pc.Parameters, pc.Created.Format(time.TimeOnly))
	}
	fmt.Println(err)
	others, _ := reg.PendingChanges(ctx, viewer)
	fmt.Println(len(others))
	// Output:
	// shop/discard {"item":"jam"} 09:01:00
	// shop/discard {"item":"bread"} 09:00:00
	// <nil>
	// 0
}

// Serving holds what a host switches while it serves: keep it, give it
// to the gate, change it at any time.
func ExampleServing() {
	serving := &actions.Serving{}
	reg := gatedShop(&actions.GateOptions{Serving: serving})
	ctx := context.Background()
	run := func(id string) {
		if _, err := reg.Run(ctx, actions.Call{Action: id, Caller: editor}); err != nil {
			fmt.Println(id, actions.CodeOf(err))
			return
		}
		fmt.Println(id, "served")
	}

	serving.SetReadOnly(true) // only reads are served
	run("shop/restock")
	run("shop/stock")
	serving.SetReadOnly(false)

	serving.Stop("shop/restock")
	run("shop/restock")
	serving.Resume("shop/restock")
	serving.StopAll()
	run("shop/stock")
	serving.ResumeAll()
	run("shop/stock")
	// Output:
	// shop/restock read_only
	// shop/stock served
	// shop/restock not_serving
	// shop/stock not_serving
	// shop/stock served
}

func ExampleGateOptions() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// One call per principal and action every 10 seconds, 2 at once.
	reg := gatedShopWith(&actions.Options{Now: func() time.Time { return now }, Gate: &actions.GateOptions{Rate: 0.1, Burst: 2}})
	for range 3 {
		_, err := reg.Run(context.Background(), actions.Call{Action: "shop/stock", Caller: viewer})
		var r *actions.Refusal
		if errors.As(err, &r) {
			fmt.Println(r.Code, r.Retry, r.RetryAt.Sub(now))
			continue
		}
		fmt.Println("ran")
	}
	// Output:
	// ran
	// ran
	// rate_limited after-backoff 10s
}

// A manifest in the old spelling (kind, destructive,
// exposure) keeps its meaning in the policy fields.
func ExampleDefinition_UnmarshalJSON() {
	var d actions.Definition
	err := json.Unmarshal([]byte(`{"id": "shop/purge", "kind": "action", "destructive": true, "exposure": "hidden"}`), &d)
	fmt.Println(err, d.Effect, d.IsDestructive(), d.Surfaces)
	// A fact declared in both spellings is refused.
	err = json.Unmarshal([]byte(`{"id": "shop/list", "kind": "read", "effect": "read"}`), &d)
	fmt.Println(err)
	// Output:
	// <nil> write true []
	// actions: definition "shop/list": constraint_violation: the action's policy is refused: /kind kind is the old spelling of effect: declare effect alone
}

func ExampleToolOptions_caller() {
	reg := gatedShop(nil)
	for _, c := range []*identity.Caller{viewer, editor} {
		tools, _ := reg.Tools(&actions.ToolOptions{Caller: c})
		var names []string
		for _, t := range tools {
			names = append(names, t.Name)
		}
		fmt.Println(strings.Join(names, " "))
	}
	// Output:
	// shop-stock
	// shop-discard shop-restock shop-stock
}

func ExampleTrace_Caller() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/whoami", Effect: actions.EffectRead},
		func(_ context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			if c := t.Caller(); c != nil {
				return c.Principal + " on " + string(c.Surface), nil
			}
			return "the host itself", nil
		}))
	res, _ := reg.Run(context.Background(), actions.Call{Action: "shop/whoami", Caller: viewer})
	fmt.Println(res.Value)
	res, _ = reg.Run(context.Background(), actions.Call{Action: "shop/whoami"})
	fmt.Println(res.Value)
	// Output:
	// vera on mcp
	// the host itself
}
