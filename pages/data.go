package pages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// What the pages show, read from the registry and its store. Every access
// decision is made here, for the person asking: a change only for the
// principal who proposed it, a record only for its caller unless
// Options.SeesAll says otherwise.

// The errors of a change or record the pages will not show.
var (
	// errNotFound: no such change or record, or not the person's to see;
	// the pages answer 404 with no detail.
	errNotFound = errors.New("pages: not found")
	// errExpired: the person's change, past its expiry; nothing ran.
	errExpired = errors.New("pages: the change expired")
	// errDecided: the person's change, confirmed or rejected already.
	errDecided = errors.New("pages: the change was decided already")
)

// change is a pending change as a person sees it before deciding.
type change struct {
	ID       string
	Proposer who
	// Created and Expires bound the change's life.
	Created, Expires time.Time
	// Calls are the held calls, in order: one for a single call, each
	// step for a held batch (confirming runs them all).
	Calls []call
	// Summary is the host's description of the held call
	// (actions.Approval.Describe), Reason the approval rule's; either
	// may be empty.
	Summary, Reason string
	// Editable: a single call (not a batch), which the person may
	// replace with their own arguments (actions.Decision.Params).
	Editable bool
}

// call is one held call of a change.
type call struct {
	Action, Alias      string
	Title, Description string
	// Effect is read, write or delete; Destructive the action's derived
	// destructiveness (MCP destructiveHint).
	Effect      string
	Destructive bool
	// Parameters is the JSON text of the parameters exactly as the body
	// will receive them (defaults filled, refs resolved): what the person
	// confirms. For a step of a held batch, its "with" as written.
	Parameters string
}

// who is a caller as the pages show one.
type who struct {
	Principal string
	Surface   string
	Client    string // the connected app's id, if any
}

// decision is what came of a confirmation or a rejection.
type decision struct {
	Confirmed bool
	// Edited: the person's own arguments ran (or were held again, Held)
	// in place of the change's; Changes are the members that differ.
	Edited, Held bool
	Changes      []memberChange
	// Outcome is "done" or "refused" for a confirmation.
	Outcome string
	// Result is the canonical JSON of a done call's result; Code and
	// Message a refused call's refusal.
	Result        string
	Code, Message string
	// Record is the seq of the confirmed call's record, "" when unknown.
	Record string
}

// query selects run log records; zero fields select everything.
type query struct {
	Action string
	// Outcome is "", "done", "refused" (Code: one code only), "held",
	// "confirmed" or "rejected".
	Outcome, Code string
	Caller        string // a principal
	Since, Until  time.Time
	Cursor        string // the seq of the last record shown
	Limit         int
}

// recordPage is one page of records, newest first; Next is the cursor of
// the following page, "" on the last one.
type recordPage struct {
	Records []record
	Next    string
}

// record is one run log record as the pages show it.
type record struct {
	ID         string // the store's seq
	At         time.Time
	Origin     string
	RolledBack bool
	Audit      *audit // nil for none
	Entry      store.RunEntry
	Text       string // the entry's canonical JSON as stored

	raw store.Record // what a replay runs
}

// audit is the audit record kept beside an entry.
type audit struct {
	At            time.Time
	Caller        *who // nil: the host's own call
	Capabilities  []string
	Alias         string
	Code          string
	PendingChange string
}

// replayed is what replaying a record found: the same, or the first
// member that differs (a JSON Pointer) with both values.
type replayed struct {
	Same            bool
	Path, Want, Got string
}

// maxPage bounds a page of records.
const maxPage = 200

// pending lists the changes c proposed or may decide (an approver's
// list: actions.Registry.ChangesToDecide), newest first, each once.
func (h *Handler) pending(ctx context.Context, c *identity.Caller) ([]change, error) {
	own, err := h.reg.PendingChanges(ctx, c)
	if err != nil {
		return nil, err
	}
	theirs, err := h.reg.ChangesToDecide(ctx, c)
	if err != nil {
		return nil, err
	}
	defs := h.definitions()
	seen := map[string]bool{}
	var out []change
	for _, pc := range append(own, theirs...) {
		if !seen[pc.ID] {
			seen[pc.ID] = true
			out = append(out, changeOf(pc, defs))
		}
	}
	slices.SortStableFunc(out, func(a, b change) int { return b.Created.Compare(a.Created) })
	return out, nil
}

func (h *Handler) definitions() map[string]actions.Definition {
	defs := map[string]actions.Definition{}
	for _, d := range h.reg.Definitions() {
		defs[d.ID] = d
	}
	return defs
}

// changeOf is the change as the screen shows it: its one call, or every
// step of a held batch (a step's parameters are its "with" as the batch
// wrote it, placeholders included).
func changeOf(pc actions.PendingChange, defs map[string]actions.Definition) change {
	c := change{ID: pc.ID, Proposer: whoOf(&pc.Proposer), Created: pc.Created, Expires: pc.Expires, Summary: pc.Description, Reason: pc.Reason}
	if pc.Batch == nil {
		c.Editable = pc.Preview == nil
		c.Calls = []call{callOf(pc.Action, pc.Alias, pc.Parameters, defs)}
		if pc.Preview != nil {
			// A call held after its preview (a program): every call it
			// made, in order, with its parameters as they ran.
			for _, st := range pc.Preview.Steps {
				if st.Call != nil {
					c.Calls = append(c.Calls, callOf(st.Call.Action, "", st.Call.Parameters, defs))
				}
			}
		}
		return c
	}
	for _, st := range pc.Batch.Steps {
		with := "{}"
		if st.With != nil {
			// encoding/json writes a json.Number's digits as they are
			// (CanonicalJSON would round one a double does not hold):
			// the screen shows what runs.
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if enc.Encode(st.With) == nil {
				with = strings.TrimSuffix(b.String(), "\n")
			}
		}
		c.Calls = append(c.Calls, callOf(st.Call, "", with, defs))
	}
	return c
}

// callOf is one held call, described by its action's definition (a call
// of an action no longer registered reads as a destructive write).
func callOf(action, alias, params string, defs map[string]actions.Definition) call {
	c := call{Action: action, Alias: alias, Parameters: params, Effect: "write", Destructive: true}
	if d, ok := defs[action]; ok {
		c.Title, c.Description = d.Title, d.Description
		c.Effect, c.Destructive = string(d.EffectOf()), d.IsDestructive()
	}
	return c
}

func whoOf(c *identity.Caller) who {
	w := who{Principal: c.Principal, Surface: string(c.Surface)}
	if c.Client != nil {
		w.Client = c.Client.ID
	}
	return w
}

// change returns c's pending change id. Errors: errNotFound when there is
// no such change or c may not decide it (never told apart); errExpired
// and errDecided only for a change c proposed.
func (h *Handler) change(ctx context.Context, id string, c *identity.Caller) (change, error) {
	pc, err := h.reg.PendingChange(ctx, id, c)
	if err == nil {
		return changeOf(pc, h.definitions()), nil
	}
	if !errors.Is(err, codes.UnknownChange) {
		return change{}, err
	}
	return change{}, h.whyUnknown(ctx, id, c)
}

// whyUnknown tells apart, for the change's own person, what the registry
// answers unknown_change to alike: a change still held that the registry
// will not show its proposer has expired; one whose decision the log
// kept (a rejection, or a confirmation that committed) was decided.
// Anything else, and anyone else, is not found.
func (h *Handler) whyUnknown(ctx context.Context, id string, c *identity.Caller) error {
	if pc, err := h.store.Pending().Get(ctx, id); err == nil {
		if pc.Proposer.Principal == c.Principal {
			return errExpired
		}
		return errNotFound
	}
	recs, err := h.store.Read(ctx, sqlstore.Filter{PendingChange: id, Principal: c.Principal,
		Stages: []store.Stage{store.StageConfirmed, store.StageRejected, store.StageEdited}, Limit: 1})
	if err == nil && len(recs) > 0 {
		return errDecided
	}
	return errNotFound
}

// memberChange is one top-level member an edit changed: its value before
// and after as canonical JSON, "" when absent on that side.
type memberChange struct {
	Member, Before, After string
}

// diffMembers lists the top-level members whose values differ between
// the canonical JSON objects before and after, by name.
func diffMembers(before, after string) []memberChange {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal([]byte(before), &a)
	_ = json.Unmarshal([]byte(after), &b)
	var out []memberChange
	for k, v := range a {
		if w, ok := b[k]; !ok || string(w) != string(v) {
			out = append(out, memberChange{Member: k, Before: string(v), After: string(b[k])})
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out = append(out, memberChange{Member: k, After: string(w)})
		}
	}
	slices.SortFunc(out, func(x, y memberChange) int { return strings.Compare(x.Member, y.Member) })
	return out
}

// decide confirms, rejects or edits (edit not nil: the person's
// arguments, JSON text) c's change id through the registry. A confirmed
// call that is then refused is not an error: the refusal is in the
// decision.
func (h *Handler) decide(ctx context.Context, id string, confirm bool, edit *string, c *identity.Caller) (decision, error) {
	if _, err := h.change(ctx, id, c); err != nil {
		return decision{}, err
	}
	d := actions.Decision{Change: id, Confirm: confirm, Caller: c}
	if edit != nil {
		d.Params, confirm = *edit, true
	}
	res, err := h.reg.Decide(ctx, d)
	if err != nil && len(res.Records) == 0 {
		if errors.Is(err, codes.UnknownChange) {
			if _, cerr := h.change(ctx, id, c); cerr != nil {
				return decision{}, cerr
			}
			return decision{}, errDecided // taken by another request between the two reads
		}
		return decision{}, err
	}
	if !confirm {
		return decision{}, nil
	}
	entry := res.Entry()
	out := decision{Confirmed: true, Outcome: string(entry.Outcome), Result: entry.Result}
	if edit != nil && len(res.Records) > 0 {
		a := res.Records[0].Audit
		out.Edited, out.Held = true, errors.Is(err, codes.ConfirmationRequired)
		out.Changes = diffMembers(a.Original, entry.Parameters)
		out.Record = h.confirmation(ctx, id, store.StageEdited)
	} else {
		out.Record = h.confirmation(ctx, id, store.StageConfirmed)
	}
	if err != nil {
		var r *actions.Refusal
		if errors.As(err, &r) {
			out.Code, out.Message = string(r.Code), r.Message
		} else {
			out.Code, out.Message = string(actions.CodeOf(err)), "the call failed"
		}
		out.Outcome = string(store.OutcomeRefused)
	}
	return out, nil
}

// confirmation is the seq of the newest record of change id at stage
// (confirmed, or edited), ""
// when the log holds none.
func (h *Handler) confirmation(ctx context.Context, id string, stage store.Stage) string {
	recs, err := h.store.Read(ctx, sqlstore.Filter{PendingChange: id, Stages: []store.Stage{stage},
		Kept: sqlstore.KeptAndUndone, Newest: true, Limit: 1})
	if err != nil || len(recs) == 0 {
		return ""
	}
	return strconv.FormatInt(recs[0].Seq, 10)
}

// notHeldStages are the stages of a refused call that was not held: no
// stage, or a confirmation the call then refused.
var notHeldStages = []store.Stage{"", store.StageConfirmed}

// records reads one page of the log that q selects and c may read,
// newest first, committed and rolled-back records alike.
func (h *Handler) records(ctx context.Context, q query, c *identity.Caller) (recordPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxPage {
		limit = maxPage
	}
	f := sqlstore.Filter{Action: q.Action, Principal: q.Caller, Since: q.Since, Until: q.Until,
		Kept: sqlstore.KeptAndUndone, Newest: true, Limit: limit + 1}
	if !h.seesAll(c) {
		if q.Caller != "" && q.Caller != c.Principal {
			return recordPage{}, nil
		}
		f.Principal = c.Principal
	}
	switch q.Outcome {
	case "":
	case "done":
		f.Outcome = store.OutcomeDone
	case "refused":
		f.Outcome, f.Stages, f.Code = store.OutcomeRefused, notHeldStages, codes.Code(q.Code)
	case "held":
		f.Stages = []store.Stage{store.StageHeld}
	case "confirmed":
		f.Stages = []store.Stage{store.StageConfirmed}
	case "rejected":
		f.Stages = []store.Stage{store.StageRejected}
	default:
		return recordPage{}, fmt.Errorf("pages: unknown outcome filter %q", q.Outcome)
	}
	if q.Cursor != "" {
		seq, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || seq <= 0 {
			return recordPage{}, errors.New("pages: bad cursor")
		}
		f.Before = seq
	}
	recs, err := h.store.Read(ctx, f)
	if err != nil {
		return recordPage{}, err
	}
	page := recordPage{Records: make([]record, 0, len(recs))}
	for _, r := range recs[:min(len(recs), limit)] {
		page.Records = append(page.Records, recordOf(r))
	}
	if len(recs) > limit {
		page.Next = page.Records[limit-1].ID
	}
	return page, nil
}

func (h *Handler) seesAll(c *identity.Caller) bool { return h.o.SeesAll != nil && h.o.SeesAll(c) }

func recordOf(r sqlstore.Record) record {
	out := record{ID: strconv.FormatInt(r.Seq, 10), At: r.RecordedAt, Origin: r.Origin, RolledBack: r.RolledBack,
		Entry: r.Entry, Text: r.Text, raw: r.Record}
	if a := r.Audit; a != (store.Audit{}) {
		out.Audit = &audit{At: a.At, Alias: a.Alias, Code: string(a.Code), PendingChange: a.PendingChange}
		if a.Caller != nil {
			w := whoOf(a.Caller)
			out.Audit.Caller = &w
			out.Audit.Capabilities = slices.Clone(a.Caller.Capabilities)
		}
	}
	return out
}

// record reads record id (a seq) if c may read it; errNotFound otherwise.
func (h *Handler) record(ctx context.Context, id string, c *identity.Caller) (record, error) {
	seq, err := strconv.ParseInt(id, 10, 64)
	if err != nil || seq <= 0 || seq == 1<<63-1 {
		return record{}, errNotFound
	}
	f := sqlstore.Filter{After: seq - 1, Before: seq + 1, Kept: sqlstore.KeptAndUndone, Limit: 1}
	if !h.seesAll(c) {
		f.Principal = c.Principal
	}
	recs, err := h.store.Read(ctx, f)
	switch {
	case err != nil:
		return record{}, err
	case len(recs) == 0:
		return record{}, errNotFound
	}
	return recordOf(recs[0]), nil
}

// replay runs record id again on Options.Replayer and compares.
func (h *Handler) replay(ctx context.Context, id string, c *identity.Caller) (replayed, error) {
	r, err := h.record(ctx, id, c)
	if err != nil {
		return replayed{}, err
	}
	_, err = h.o.Replayer.Replay(ctx, r.raw)
	var d *actions.Divergence
	switch {
	case err == nil:
		return replayed{Same: true}, nil
	case errors.As(err, &d):
		return replayed{Path: d.Path, Want: d.Want, Got: d.Got}, nil
	}
	return replayed{}, err
}
