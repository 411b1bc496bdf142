package actions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actionreg/actions"
)

// gatedShop is a registry with three gated actions: a read, an additive
// write and a delete that needs a person's confirmation.
func gatedShop(opts *actions.GateOptions) *actions.Registry[*actions.Trace] {
	reg := actions.NewRegistry[*actions.Trace](&actions.Options{Gate: opts})
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
	viewer = &actions.Caller{Principal: "vera", Capabilities: []string{"stock.read"}, Surface: actions.SurfaceMCP}
	editor = &actions.Caller{Principal: "eddie", Capabilities: []string{"stock.read", "stock.write"}, Surface: actions.SurfaceMCP}
)

func ExampleCaller() {
	reg := gatedShop(nil)
	ctx := context.Background()
	res, _, err := reg.Run(ctx, "shop/stock", nil, &actions.Host[*actions.Trace]{Caller: viewer})
	fmt.Println(res, err)
	// A caller who may not call an action is told it does not exist; the
	// host learns why.
	_, entry, err := reg.Run(ctx, "shop/restock", `{"anything": "at all"}`, &actions.Host[*actions.Trace]{Caller: viewer})
	fmt.Println(err)
	fmt.Println(errors.Is(err, actions.ErrForbiddenCapability), entry.Error)
	// Output:
	// map[apples:3] <nil>
	// unknown_action: no action is registered under this id
	// true forbidden_capability
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

func ExampleRegistry_Confirm() {
	reg := gatedShop(nil)
	ctx := context.Background()
	_, _, err := reg.Run(ctx, "shop/discard", `{"item":"milk"}`, &actions.Host[*actions.Trace]{Caller: editor})
	var r *actions.Refusal
	if !errors.As(err, &r) || r.Pending == nil {
		fmt.Println("not held:", err)
		return
	}
	fmt.Println(r.Code, r.Pending.Action)

	// Later, on the host's own screen, the same person confirms: every
	// check is made again, as that person, and the body runs once.
	onScreen := &actions.Caller{Principal: "eddie", Capabilities: []string{"stock.write"}, Surface: actions.SurfaceUI}
	host := &actions.Host[*actions.Trace]{Caller: onScreen, OnAudit: func(e actions.RunEntry, a actions.Audit) {
		fmt.Println("audit:", e.Action, e.Outcome, a.PendingChange == r.Pending.ID)
	}}
	res, _, err := reg.Confirm(ctx, r.Pending.ID, host)
	fmt.Println(res, err)
	_, _, err = reg.Confirm(ctx, r.Pending.ID, host)
	fmt.Println(err)
	// Output:
	// confirmation_required shop/discard
	// audit: shop/discard done true
	// discarded milk <nil>
	// unknown_change: no pending change of this caller has this id
}

func ExampleRegistry_Reject() {
	reg := gatedShop(nil)
	ctx := context.Background()
	_, _, err := reg.Run(ctx, "shop/discard", `{"item":"eggs"}`, &actions.Host[*actions.Trace]{Caller: editor})
	var r *actions.Refusal
	errors.As(err, &r)
	fmt.Println(reg.Reject(ctx, r.Pending.ID, editor))
	_, _, err = reg.Confirm(ctx, r.Pending.ID, &actions.Host[*actions.Trace]{Caller: editor})
	fmt.Println(err)
	// Output:
	// <nil>
	// unknown_change: no pending change of this caller has this id
}

func ExampleRegistry_PendingChange() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reg := gatedShop(&actions.GateOptions{PendingFor: 24 * time.Hour, Now: func() time.Time { return now }})
	_, _, err := reg.Run(context.Background(), "shop/discard", `{"item": "bread"}`, &actions.Host[*actions.Trace]{Caller: editor})
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

func ExampleRegistry_SetReadOnly() {
	reg := gatedShop(nil)
	reg.SetReadOnly(true)
	host := &actions.Host[*actions.Trace]{Caller: editor}
	_, _, err := reg.Run(context.Background(), "shop/restock", nil, host)
	fmt.Println(err, actions.CodeOf(err) == actions.CodeReadOnly)
	_, _, err = reg.Run(context.Background(), "shop/stock", nil, host)
	fmt.Println(err)
	// Output:
	// read_only: the registry is read-only: only reads are served true
	// <nil>
}

func ExampleRegistry_StopServing() {
	reg := gatedShop(nil)
	host := &actions.Host[*actions.Trace]{Caller: editor}
	reg.StopServing("shop/restock")
	_, _, err := reg.Run(context.Background(), "shop/restock", nil, host)
	fmt.Println(err)
	reg.Serve("shop/restock")
	reg.StopServingAll()
	_, _, err = reg.Run(context.Background(), "shop/stock", nil, host)
	fmt.Println(err)
	reg.ServeAll()
	_, _, err = reg.Run(context.Background(), "shop/stock", nil, host)
	fmt.Println(err)
	// Output:
	// not_serving: the host is not serving this action now
	// not_serving: the host is not serving actions now
	// <nil>
}

func ExampleGateOptions() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// One call per principal and action every 10 seconds, 2 at once.
	reg := gatedShop(&actions.GateOptions{Rate: 0.1, Burst: 2, Now: func() time.Time { return now }})
	host := &actions.Host[*actions.Trace]{Caller: viewer}
	for range 3 {
		_, _, err := reg.Run(context.Background(), "shop/stock", nil, host)
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

func ExampleDefinition_Fold() {
	// An old declaration keeps its meaning in the new fields.
	d := actions.Definition{ID: "shop/purge", Kind: actions.KindAction, Destructive: true, Exposure: actions.ExposureHidden}
	fmt.Println(d.Fold(), d.Effect, d.IsDestructive(), d.Surfaces, d.Kind == "")
	// A fact declared in both spellings is refused.
	both := actions.Definition{ID: "shop/list", Kind: actions.KindRead, Effect: actions.EffectRead}
	fmt.Println(both.Fold())
	// Output:
	// <nil> write true [] true
	// constraint_violation: the action's policy is refused: /kind kind is the old spelling of effect: declare effect alone
}

func ExampleToolOptions_caller() {
	reg := gatedShop(nil)
	for _, c := range []*actions.Caller{viewer, editor} {
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

func ExampleMemoryPendingStore() {
	store := actions.NewMemoryPendingStore()
	reg := gatedShop(&actions.GateOptions{Pending: store})
	_, _, _ = reg.Run(context.Background(), "shop/discard", `{"item":"tea"}`, &actions.Host[*actions.Trace]{Caller: editor})
	fmt.Println(store.Len())
	// Output:
	// 1
}

func ExampleTrace_Caller() {
	reg := actions.NewRegistry[*actions.Trace](nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/whoami", Effect: actions.EffectRead},
		func(_ context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			if c := t.Caller(); c != nil {
				return c.Principal + " on " + string(c.Surface), nil
			}
			return "the host itself", nil
		}))
	res, _, _ := reg.Run(context.Background(), "shop/whoami", nil, &actions.Host[*actions.Trace]{Caller: viewer})
	fmt.Println(res)
	res, _, _ = reg.Run(context.Background(), "shop/whoami", nil, nil)
	fmt.Println(res)
	// Output:
	// vera on mcp
	// the host itself
}
