package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

// helpdeskDelete is a delete that an agent may propose and that only a
// supervisor holding tickets.approve may decide (four eyes), on the
// host's own screen; tickets numbered 100 and up are held, the others run.
func helpdeskDelete() *actions.Registry {
	reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{}})
	reg.MustRegister(actions.New(actions.Definition{
		ID: "tickets/delete", Effect: actions.EffectDelete, Capability: "tickets.write", NeedsConfirmation: true,
		Approval: &actions.Approval{
			Capability: "tickets.approve",
			Proposer:   actions.ProposerNever,
			When: func(_ context.Context, c actions.CheckedCall) (bool, string, error) {
				n, err := c.Params["id"].(json.Number).Int64()
				return n >= 100, "archived tickets need a supervisor", err
			},
			Describe: func(_ context.Context, c actions.CheckedCall) (string, error) {
				return fmt.Sprintf("ticket #%v, Printer on fire, 3 comments", c.Params["id"]), nil
			},
		},
		Parameters: `{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string","default":"none"}},"required":["id"]}`,
	}, func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
		return "deleted " + fmt.Sprint(p["id"]), nil
	}))
	return reg
}

func ExampleApproval() {
	reg := helpdeskDelete()
	ctx := context.Background()
	agent := &identity.Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	supervisor := &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceUI}

	// The rule lets ticket 7 through; ticket 120 is held.
	res, err := reg.Run(ctx, actions.Call{Action: "tickets/delete", Params: `{"id":7}`, Caller: agent})
	fmt.Println(res.Value, err)
	_, err = reg.Run(ctx, actions.Call{Action: "tickets/delete", Params: `{"id":120}`, Caller: agent})
	var r *actions.Refusal
	errors.As(err, &r)
	fmt.Println(r.Code)

	// The agent may not decide its own change, not even from the screen.
	agentOnScreen := *agent
	agentOnScreen.Surface = identity.SurfaceUI
	_, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: &agentOnScreen})
	fmt.Println(err)

	// The supervisor sees it in the list, as it will run, and confirms.
	list, _ := reg.ChangesToDecide(ctx, supervisor)
	fmt.Println(len(list), list[0].Parameters, list[0].Description, "/", list[0].Reason)
	res, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: supervisor})
	fmt.Println(res.Value, err, res.Records[0].Audit.Caller.Principal)
	// Output:
	// deleted 7 <nil>
	// confirmation_required
	// forbidden_proposer: the change needs another person's decision
	// 1 {"id":120,"note":"none"} ticket #120, Printer on fire, 3 comments / archived tickets need a supervisor
	// deleted 120 <nil> sam
}

func ExampleRegistry_MayDecide() {
	reg := helpdeskDelete()
	ctx := context.Background()
	agent := &identity.Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	_, err := reg.Run(ctx, actions.Call{Action: "tickets/delete", Params: `{"id":300}`, Caller: agent})
	var r *actions.Refusal
	errors.As(err, &r)

	supervisorInClient := &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceMCP}
	fmt.Println(reg.MayDecide(ctx, r.Pending.ID, supervisorInClient))
	stranger := &identity.Caller{Principal: "eve", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceUI}
	fmt.Println(reg.MayDecide(ctx, r.Pending.ID, stranger))
	// Output:
	// forbidden_surface: the change may not be decided from this surface
	// unknown_change: no pending change of this caller has this id
}

// An approver's list: the changes held by others that this supervisor
// may decide, and none for the agent who proposed them (four eyes).
func ExampleRegistry_ChangesToDecide() {
	reg := helpdeskDelete()
	ctx := context.Background()
	agent := &identity.Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	for _, id := range []string{`{"id":101}`, `{"id":102}`} {
		_, _ = reg.Run(ctx, actions.Call{Action: "tickets/delete", Params: id, Caller: agent})
	}
	supervisor := &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceUI}
	list, err := reg.ChangesToDecide(ctx, supervisor)
	fmt.Println(len(list), err)
	for _, pc := range list {
		fmt.Println(pc.Proposer.Principal, pc.Parameters)
	}
	agentOnScreen := *agent
	agentOnScreen.Surface = identity.SurfaceUI
	own, _ := reg.ChangesToDecide(ctx, &agentOnScreen)
	fmt.Println(len(own))
	// Output:
	// 2 <nil>
	// agent {"id":102,"note":"none"}
	// agent {"id":101,"note":"none"}
	// 0
}

// A supervisor edits an agent's held delete: the edited arguments are a
// new call of the same action, checked in full; the rule lets ticket 7
// run under the decision, and the record says what the edit replaced.
func ExampleDecision_edit() {
	reg := helpdeskDelete()
	ctx := context.Background()
	agent := &identity.Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	sam := &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceUI}

	_, err := reg.Run(ctx, actions.Call{Action: "tickets/delete", Params: `{"id":107}`, Caller: agent})
	var r *actions.Refusal
	errors.As(err, &r)
	res, err := reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Params: `{"id":7}`, Caller: sam})
	fmt.Println(res.Value, err)
	a := res.Records[0].Audit
	fmt.Println(a.Stage, a.Caller.Principal, a.Original, "->", res.Records[0].Entry.Parameters)
	// Output:
	// deleted 7 <nil>
	// edited sam {"id":107,"note":"none"} -> {"id":7,"note":"none"}
}
