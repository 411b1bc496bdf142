// Previews: a call run before it is held, so that the person sees every
// call it makes, and run again on confirmation only as it was shown.

package actions

import (
	"context"
	"sync/atomic"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// preview is one top-level call of an action with Definition.Preview
// while it runs before it may be held.
type preview struct {
	ctx context.Context // the run's: inside the savepoint
	end func(undo bool) error
	// wanted is set by a nested call that needs confirmation.
	wanted atomic.Bool
	// Set by the frame's hold before the body runs: the checked call,
	// its canonical parameters, and whether its own approval holds it.
	call   CheckedCall
	text   string
	hold   bool
	reason string
}

// wantedReason is the reason of a change held because a call its body
// made needs confirmation.
const wantedReason = "a call it makes needs a person's confirmation"

// startPreview starts the preview of inv's call of an action with
// Definition.Preview: nil when the call runs as any call does (a call of
// the host, a confirmation; a store that cannot undo part of a unit). A
// replay previews too, so that a call recorded held after its preview
// replays as held, its preview's steps run again and undone.
// Errors: internal when the store could not mark the unit.
func (r *Registry) startPreview(ctx context.Context, inv invocation) (*preview, error) {
	if inv.caller == nil || inv.confirming != "" {
		return nil, nil
	}
	sctx, end, err := r.savepoint(ctx)
	if err != nil {
		return nil, internalRefusal("the call's preview could not be started", err)
	}
	if end == nil {
		return nil, nil
	}
	return &preview{ctx: sctx, end: end}, nil
}

// settle ends the preview once the body ran (result, entry, err as the
// frame gave them): a call to hold is undone and held by store, shown
// its entry; any other is kept (or, refused, undone) as it ran.
func (p *preview) settle(ctx context.Context, result any, entry store.RunEntry, err error,
	store func(ctx context.Context, call CheckedCall, text, reason string, shown *store.RunEntry) error) (any, store.RunEntry, error) {
	hold := err == nil && (p.hold || p.wanted.Load())
	if uerr := p.end(err != nil || hold); uerr != nil && err == nil {
		// What the run wrote cannot be told apart from the rest of the
		// unit: neither kept nor held.
		err = internalRefusal("the call's preview could not be settled", uerr)
		return nil, refusedEntry(entry, err, entry.Parameters), err
	}
	if !hold {
		return result, entry, err
	}
	reason := p.reason
	if reason == "" && p.wanted.Load() {
		reason = wantedReason
	}
	shown := cloneEntry(entry)
	err = store(ctx, p.call, p.text, reason, &shown)
	return nil, refusedEntry(entry, err, entry.Parameters), err
}

// previewStale is the refusal of a confirmed call whose run departs, at
// d.Path, from the preview the person was shown.
func previewStale(d *Divergence) *Refusal {
	r := NewRefusal(codes.StaleChange, "the call, run again, departs at "+d.Path+" from what the person was shown: nothing is kept")
	r.NextAction = "Reject the change and propose the call again: the person must see what will run."
	r.cause = d
	return r
}
