// Approval: who may decide a change held for confirmation, and from which surface.

package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// Approval is an action's approval policy: who may decide (confirm or
// reject) a call of it held for a person's confirmation, and from which
// surface. It refines [Definition].NeedsConfirmation, which it requires.
// An action needing confirmation without an Approval is decided by its
// proposer alone, from the surfaces of [GateOptions].DecideFrom (the
// host's own screen, ui, by default): a person confirms a change on the
// host's own screen, and a plugin or a model never does.
//
// [Registry.Decide] enforces it whatever the entry point (a page, the
// host's own endpoint, an MCP elicitation or input request): a person
// the policy does not name never sees the change (unknown_change), and
// one it names under conditions not met is refused with a typed code
// (forbidden_surface, forbidden_capability, forbidden_proposer).
type Approval struct {
	// Capability, when set, lets every caller holding it decide the
	// change, as a supervisor decides an agent's (see Proposer for the
	// proposer's own share).
	Capability string `json:"capability,omitempty"`
	// Proposer says whether the principal who proposed the change may
	// decide it; empty means ProposerDecides.
	Proposer ProposerRule `json:"proposer,omitempty"`
	// Surfaces are where a decision may come from (ui, mcp, ai). Nil
	// keeps the gate's [GateOptions].DecideFrom (ui alone by default);
	// listing mcp or ai lets a person answer in an MCP client's
	// elicitation, which a client may fill in by itself: opt in only
	// where the host trusts the client's person.
	Surfaces []identity.Surface `json:"surfaces,omitzero"`
	// When, if set, decides which calls are held: the rest run at once,
	// as calls of an action needing no confirmation do. It sees the
	// checked call (see [CheckedCall]) and says whether to hold it (hold
	// true), and why, in words for the person, shown with the change (no
	// secret, no value the person may not see). It may be called
	// concurrently. It fails
	// closed: an error, a panic, no answer within the gate's
	// RuleTimeout, or a call whose context ended meanwhile holds the
	// call, with a reason saying the rule failed (never the error's
	// text). It must honour ctx. Not applied to a batch's steps, whose
	// arguments may come from earlier steps: a batch holding a step of
	// the action is held whole. Set in Go.
	When func(ctx context.Context, call CheckedCall) (hold bool, reason string, err error) `json:"-"`
	// Describe, if set, writes what the person reads about a held call
	// beside its arguments: the ticket's title and comment count rather
	// than "id 2". It sees the checked call, and ctx carries the unit's
	// transaction (sqlstore.Tx). Its text, cut to 4 KiB (of UTF-8, on a
	// character's boundary, as the reason is), is stored with the change; an error or a panic leaves the
	// description empty, and the call is held all the same. Not called
	// for a batch's steps. Set in Go.
	Describe func(ctx context.Context, call CheckedCall) (string, error) `json:"-"`
}

// CheckedCall is a call as its body would receive it: the action's id,
// the parameters after defaults and refs (JSON's Go types; the rule may
// read them and must not change them), and who calls.
type CheckedCall struct {
	Action string
	Params map[string]any
	Caller *identity.Caller
}

// maxDescriptionBytes bounds a held call's description
// ([Approval].Describe) and reason, in bytes of UTF-8.
const maxDescriptionBytes = 4096

// defaultRuleTimeout is GateOptions.RuleTimeout when left zero.
const defaultRuleTimeout = time.Second

// ruleFailed is the reason of a call held because its rule failed.
const ruleFailed = "the approval rule gave no answer: held for a person"

// shouldHold runs a's rule on call: whether to hold, and the reason.
// Without a rule every call is held. It fails closed (see Approval.When).
func (g *gate) shouldHold(ctx context.Context, a *Approval, call CheckedCall) (bool, string) {
	if a == nil || a.When == nil {
		return true, ""
	}
	limit := g.opts.RuleTimeout
	if limit <= 0 {
		limit = defaultRuleTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	type answer struct {
		hold   bool
		reason string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		var a2 answer
		if perr := safeCall("approval rule", func() { a2.hold, a2.reason, a2.err = a.When(rctx, call) }); perr != nil {
			a2.err = perr
		}
		done <- a2
	}()
	select {
	case got := <-done:
		if got.err != nil || rctx.Err() != nil {
			return true, ruleFailed
		}
		return got.hold, cut(got.reason)
	case <-rctx.Done():
		return true, ruleFailed
	}
}

// describeHeld runs a's description hook on call: "" without one, or when it
// fails.
func describeHeld(ctx context.Context, a *Approval, call CheckedCall) string {
	if a == nil || a.Describe == nil {
		return ""
	}
	var text string
	var err error
	if perr := safeCall("approval description", func() { text, err = a.Describe(ctx, call) }); perr != nil || err != nil {
		return ""
	}
	return cut(text)
}

// cut bounds s to maxDescriptionBytes, on a character's boundary.
func cut(s string) string {
	if len(s) <= maxDescriptionBytes {
		return s
	}
	s = s[:maxDescriptionBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ProposerRule is what an [Approval] lets the proposer of a change do.
type ProposerRule string

// The proposer rules.
const (
	// ProposerDecides: the proposer may decide the change (the default),
	// and so may the holders of the Approval's Capability, if any.
	ProposerDecides ProposerRule = "decides"
	// ProposerNeedsCapability: the proposer may decide only while
	// holding the Approval's Capability (which must be set); other
	// holders may too.
	ProposerNeedsCapability ProposerRule = "needs-capability"
	// ProposerNever: four eyes. The proposer never decides its own
	// change; a holder of the Capability does, or, with no Capability,
	// any other principal who may call the action.
	ProposerNever ProposerRule = "never"
)

// checkApproval lists what is wrong with d's approval policy.
func (d *Definition) checkApproval() []Issue {
	a := d.Approval
	if a == nil {
		return nil
	}
	var issues []Issue
	add := func(path, msg string) {
		issues = append(issues, Issue{Path: "/approval" + path, Keyword: "approval", Message: msg})
	}
	if !d.NeedsConfirmation {
		add("", "an approval policy needs needsConfirmation")
	}
	switch a.Proposer {
	case "", ProposerDecides, ProposerNever:
	case ProposerNeedsCapability:
		if a.Capability == "" {
			add("/proposer", "needs-capability names no capability")
		}
	default:
		add("/proposer", "the proposer rule is decides, needs-capability or never")
	}
	for i, s := range a.Surfaces {
		switch {
		case !slices.Contains(allSurfaces, s):
			add(fmt.Sprintf("/surfaces/%d", i), "a surface is ui, mcp or ai")
		case slices.Index(a.Surfaces, s) < i:
			add(fmt.Sprintf("/surfaces/%d", i), "the surface is listed twice")
		}
	}
	return issues
}

// clone copies a with its slices; nil stays nil.
func (a *Approval) clone() *Approval {
	if a == nil {
		return nil
	}
	cp := *a
	if a.Surfaces != nil {
		cp.Surfaces = append([]identity.Surface{}, a.Surfaces...)
	}
	return &cp
}

// decideFrom is where decisions may come from by default.
var decideFrom = []identity.Surface{identity.SurfaceUI}

// mayDecide checks whether c may decide pc under the approval policies of
// the actions it holds (def gives an action's definition, nil when it is
// no longer registered: the proposer alone decides it). Errors:
// unknown_change when c is nobody the policies name (nor may see the
// change); forbidden_proposer, forbidden_capability (the proposer
// without the capability needs-capability names) and forbidden_surface
// (a decision from a surface the policy does not list) otherwise.
func (g *gate) mayDecide(pc PendingChange, c *identity.Caller, def func(id string) *Definition) error {
	if c == nil || c.Principal == "" || !g.now().Before(pc.Expires) {
		return unknownChange()
	}
	var first error
	for _, id := range pc.heldActions() {
		err := g.mayDecideOne(def(id), pc.Proposer.Principal, c)
		if errors.Is(err, codes.UnknownChange) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// mayDecideOne checks c against the approval of one held action d.
func (g *gate) mayDecideOne(d *Definition, proposer string, c *identity.Caller) error {
	var a Approval
	if d != nil && d.Approval != nil {
		a = *d.Approval
	}
	own := c.Principal == proposer
	holder := false
	switch {
	case a.Capability != "":
		holder = c.Can(a.Capability)
	case a.Proposer == ProposerNever:
		holder = !own // four eyes without a capability: any other person
	}
	if !own && !holder {
		return unknownChange()
	}
	if d != nil && !own && !c.Can(d.Capability) {
		// Not a person who may call the action: the change stays hidden.
		return unknownChange()
	}
	if own {
		switch a.Proposer {
		case ProposerNever:
			return NewRefusal(codes.ForbiddenProposer, "the change needs another person's decision")
		case ProposerNeedsCapability:
			if !holder {
				return NewRefusal(codes.ForbiddenCapability, "the decision needs the approval capability")
			}
		}
	}
	surfaces := a.Surfaces
	if surfaces == nil {
		surfaces = g.opts.DecideFrom
	}
	if surfaces == nil {
		surfaces = decideFrom
	}
	if !slices.Contains(surfaces, c.Surface) {
		return NewRefusal(codes.ForbiddenSurface, "the change may not be decided from this surface")
	}
	return nil
}

// heldActions are the ids of the actions whose policy decides pc: the
// held steps of a batch, or its one action.
func (pc PendingChange) heldActions() []string {
	if len(pc.Held) == 0 {
		return []string{pc.Action}
	}
	ids := make([]string, len(pc.Held))
	for i, h := range pc.Held {
		ids[i] = h.Action
	}
	return ids
}

// definitionOf returns the definition registered under id, nil for none.
func (r *Registry) definitionOf(id string) *Definition {
	if reg, ok := r.lookup(id); ok {
		return &reg.action.Definition
	}
	return nil
}

// decidable returns the live pending changes c may decide, newest first.
func (g *gate) decidable(ctx context.Context, c *identity.Caller, def func(id string) *Definition) ([]PendingChange, error) {
	if c == nil || c.Principal == "" {
		return nil, nil
	}
	all, err := g.store().ListAll(ctx)
	if err != nil {
		return nil, internalRefusal("the pending changes could not be read", err)
	}
	var out []PendingChange
	for _, pc := range all {
		if g.mayDecide(pc, c, def) == nil {
			out = append(out, pc.clone())
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// rejection is the refusal a held call's caller gets once a person
// rejected it, with the person's reason.
func rejection(reason string) *Refusal {
	r := NewRefusal(codes.Rejected, "the person rejected the change: nothing ran")
	r.Reason = reason
	r.NextAction = "Do not send the same call again: a person rejected it. Tell the user, and read the reason before proposing anything else."
	return r
}

// hasRule reports whether a decides per call.
func hasRule(a *Approval) bool { return a != nil && a.When != nil }

func staleChange() *Refusal {
	return NewRefusal(codes.StaleChange, "the call, checked again, differs from what the person was shown: nothing ran")
}
