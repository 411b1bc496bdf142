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
	"github.com/actionreg/actions/sqlstore"
)

// SQL is a [Backend] on the library's call path: an [*actions.Registry]
// (a registry whose Options.Store is the [sqlstore.Store] and whose
// gate keeps its pending changes in Store.Pending()) decides and
// describes, and the store's run log is read for the log's pages.
//
// What the library lacks, and SQL makes up for by reading the store's
// tables (docs/database.md) itself:
//   - the run log newest first with a cursor (sqlstore.Filter has no
//     Before and reads in ascending order), by refusal code, and by
//     stage (held, confirmed, rejected);
//   - whether a change its person can no longer decide expired or was
//     decided (the runner answers unknown_change to both: SQL reads the
//     change's row, and the log's record of its decision).
type SQL struct {
	// Registry decides changes and gives the actions' definitions.
	Registry *actions.Registry
	// Store holds the pending changes and the run log.
	Store *sqlstore.Store
	// Replayer, when set, offers replay: a runner of the same actions on a
	// store where replaying does no harm (a fresh model, a copy). Nil: no
	// replay. Never the live runner: a replay that matches is kept.
	Replayer *actions.Registry
	// SeesAll tells who may read every record of the log; the others
	// read their own calls only. Nil: nobody sees all.
	SeesAll func(who *actions.Caller) bool
	// Now is the gate's clock (nil: time.Now): expiry is decided on it.
	Now func() time.Time
}

const (
	heldCode     = string(actions.CodeConfirmationRequired)
	rejectedCode = string(actions.CodeRejected)
)

func (l *SQL) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *SQL) q(s string) string { return l.Store.Dialect().Rebind(s) }

// Pending lists the changes that have not expired that who proposed or
// may decide (an approver's list: actions.Registry.ChangesToDecide),
// newest first, each once.
func (l *SQL) Pending(ctx context.Context, who *actions.Caller) ([]Change, error) {
	if who == nil || who.Principal == "" {
		return nil, nil
	}
	own, err := l.Registry.PendingChanges(ctx, who)
	if err != nil {
		return nil, err
	}
	theirs, err := l.Registry.ChangesToDecide(ctx, who)
	if err != nil {
		return nil, err
	}
	defs := l.definitions()
	seen := map[string]bool{}
	var out []Change
	for _, pc := range append(own, theirs...) {
		if !seen[pc.ID] {
			seen[pc.ID] = true
			out = append(out, changeOf(pc, defs))
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return b.Created.Compare(a.Created) })
	return out, nil
}

func (l *SQL) definitions() map[string]actions.Definition {
	defs := map[string]actions.Definition{}
	for _, d := range l.Registry.Definitions() {
		defs[d.ID] = d
	}
	return defs
}

// changeOf is the change as the screen shows it: its one call, or every
// step of a held batch (confirming runs them all; a step's parameters
// are its "with" as the batch wrote it, placeholders included).
func changeOf(pc actions.PendingChange, defs map[string]actions.Definition) Change {
	c := Change{ID: pc.ID, Proposer: whoOf(&pc.Proposer), Created: pc.Created, Expires: pc.Expires, Summary: pc.Description, Reason: pc.Reason}
	if pc.Batch == nil {
		c.Calls = []Call{callOf(pc.Action, pc.Alias, pc.Parameters, defs)}
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
func callOf(action, alias, params string, defs map[string]actions.Definition) Call {
	call := Call{Action: action, Alias: alias, Parameters: params, Effect: "write", Destructive: true}
	if d, ok := defs[action]; ok {
		call.Title, call.Description = d.Title, d.Description
		call.Effect, call.Destructive = string(d.EffectOf()), d.IsDestructive()
	}
	return call
}

func whoOf(c *actions.Caller) Who {
	w := Who{Principal: c.Principal, Surface: string(c.Surface)}
	if c.Client != nil {
		w.Client = c.Client.ID
	}
	return w
}

// Change returns who's change id.
func (l *SQL) Change(ctx context.Context, id string, who *actions.Caller) (Change, error) {
	if who == nil || who.Principal == "" {
		return Change{}, ErrNotFound
	}
	pc, err := l.Registry.PendingChange(ctx, id, who)
	if err == nil {
		return changeOf(pc, l.definitions()), nil
	}
	if !errors.Is(err, actions.CodeUnknownChange) {
		return Change{}, err
	}
	// unknown_change covers five cases; tell who's own apart.
	if raw, err := l.Store.Pending().Get(ctx, id); err == nil {
		if raw.Proposer.Principal == who.Principal && !l.now().Before(raw.Expires) {
			return Change{}, ErrExpired
		}
		return Change{}, ErrNotFound
	}
	if l.wasDecided(ctx, id, who.Principal) {
		return Change{}, ErrDecided
	}
	return Change{}, ErrNotFound
}

// wasDecided: the log holds principal's confirmation or rejection of id.
func (l *SQL) wasDecided(ctx context.Context, id, principal string) bool {
	var n int
	err := l.Store.DB().QueryRowContext(ctx,
		l.q("SELECT COUNT(*) FROM actions_run_log WHERE pending_change = ? AND principal = ? AND error <> ?"),
		id, principal, heldCode).Scan(&n)
	return err == nil && n > 0
}

// Decide decides through the runner.
func (l *SQL) Decide(ctx context.Context, id string, confirm bool, who *actions.Caller) (Decision, error) {
	if _, err := l.Change(ctx, id, who); err != nil {
		return Decision{}, err
	}
	res, err := l.Registry.Decide(ctx, actions.Decision{Change: id, Confirm: confirm, Caller: who})
	if err != nil && len(res.Records) == 0 {
		return Decision{}, l.undecided(ctx, id, who, err)
	}
	if !confirm {
		return Decision{}, nil
	}
	entry := res.Entry()
	d := Decision{Confirmed: true, Outcome: string(entry.Outcome), Result: entry.Result, Record: l.confirmation(ctx, id)}
	if err != nil {
		var r *actions.Refusal
		if errors.As(err, &r) {
			d.Code, d.Message = string(r.Code), r.Message
		} else {
			d.Code, d.Message = string(actions.CodeOf(err)), "the call failed"
		}
		d.Outcome = string(actions.OutcomeRefused)
	}
	return d, nil
}

// undecided maps the error of a decision that made no record.
func (l *SQL) undecided(ctx context.Context, id string, who *actions.Caller, err error) error {
	if errors.Is(err, actions.CodeUnknownChange) {
		if _, cerr := l.Change(ctx, id, who); cerr != nil {
			return cerr
		}
		return ErrDecided // taken by someone else between the two reads
	}
	return err
}

// confirmation is the id of the newest record deciding change id.
func (l *SQL) confirmation(ctx context.Context, id string) string {
	var seq int64
	err := l.Store.DB().QueryRowContext(ctx,
		l.q("SELECT seq FROM actions_run_log WHERE pending_change = ? AND error <> ? ORDER BY seq DESC LIMIT 1"), id, heldCode).Scan(&seq)
	if err != nil {
		return ""
	}
	return strconv.FormatInt(seq, 10)
}

// maxPage bounds a page of records.
const maxPage = 200

const recordColumns = "seq, recorded_at, origin, rolled_back, audit, entry"

// Records reads the log newest first; the cursor is the last seq shown.
func (l *SQL) Records(ctx context.Context, q Query, who *actions.Caller) (RecordPage, error) {
	if who == nil || who.Principal == "" {
		return RecordPage{}, nil
	}
	limit := q.Limit
	if limit <= 0 || limit > maxPage {
		limit = maxPage
	}
	var where []string
	var args []any
	add := func(cond string, vs ...any) { where = append(where, cond); args = append(args, vs...) }
	if !l.seesAll(who) {
		add("l.principal = ?", who.Principal)
	}
	if q.Caller != "" {
		add("l.principal = ?", q.Caller)
	}
	if q.Action != "" {
		add("l.action = ?", q.Action)
	}
	switch q.Outcome {
	case "":
	case "done":
		add("l.outcome = ?", string(actions.OutcomeDone))
	case "refused":
		add("l.outcome = ? AND l.error <> ? AND l.error <> ?", string(actions.OutcomeRefused), heldCode, rejectedCode)
		if q.Code != "" {
			add("l.error = ?", q.Code)
		}
	case "held":
		add("l.error = ?", heldCode)
	case "confirmed":
		add("l.pending_change <> '' AND l.error <> ? AND l.error <> ?", heldCode, rejectedCode)
	case "rejected":
		add("l.error = ?", rejectedCode)
	default:
		return RecordPage{}, fmt.Errorf("pages: unknown outcome filter %q", q.Outcome)
	}
	if !q.Since.IsZero() {
		add("l.recorded_at >= ?", q.Since.UnixMicro())
	}
	if !q.Until.IsZero() {
		add("l.recorded_at < ?", q.Until.UnixMicro())
	}
	if q.Cursor != "" {
		c, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || c <= 0 {
			return RecordPage{}, fmt.Errorf("pages: bad cursor")
		}
		add("l.seq < ?", c)
	}
	s := "SELECT " + strings.ReplaceAll(", "+recordColumns, ", ", ", l.")[2:] + " FROM actions_run_log l"
	if len(where) > 0 {
		s += " WHERE " + strings.Join(where, " AND ")
	}
	s += " ORDER BY l.seq DESC LIMIT " + strconv.Itoa(limit+1)
	recs, err := l.read(ctx, s, args...)
	if err != nil {
		return RecordPage{}, err
	}
	page := RecordPage{Records: recs}
	if len(recs) > limit {
		page.Records = recs[:limit]
		page.Next = page.Records[limit-1].ID
	}
	return page, nil
}

func (l *SQL) seesAll(who *actions.Caller) bool { return l.SeesAll != nil && l.SeesAll(who) }

func (l *SQL) read(ctx context.Context, query string, args ...any) ([]Record, error) {
	rows, err := l.Store.DB().QueryContext(ctx, l.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var seq, at int64
		var audit string
		if err := rows.Scan(&seq, &at, &r.Origin, &r.RolledBack, &audit, &r.Text); err != nil {
			return nil, err
		}
		r.ID = strconv.FormatInt(seq, 10)
		r.At = time.UnixMicro(at).UTC()
		if audit != "{}" && audit != "" {
			var a actions.Audit
			if err := json.Unmarshal([]byte(audit), &a); err != nil {
				return nil, fmt.Errorf("pages: record %d: the audit does not decode: %w", seq, err)
			}
			r.Audit = auditOf(a)
			r.raw.Audit = a
		}
		if err := json.Unmarshal([]byte(r.Text), &r.Entry); err != nil {
			return nil, fmt.Errorf("pages: record %d: the entry does not decode: %w", seq, err)
		}
		r.raw.Entry, r.raw.RolledBack = r.Entry, r.RolledBack
		out = append(out, r)
	}
	return out, rows.Err()
}

func auditOf(a actions.Audit) *Audit {
	out := &Audit{At: a.At, Alias: a.Alias, Code: string(a.Code), PendingChange: a.PendingChange}
	if a.Caller != nil {
		w := whoOf(a.Caller)
		out.Caller = &w
		out.Capabilities = slices.Clone(a.Caller.Capabilities)
	}
	return out
}

// Record reads one record.
func (l *SQL) Record(ctx context.Context, id string, who *actions.Caller) (Record, error) {
	seq, err := strconv.ParseInt(id, 10, 64)
	if err != nil || seq <= 0 || who == nil || who.Principal == "" {
		return Record{}, ErrNotFound
	}
	query := "SELECT " + recordColumns + " FROM actions_run_log WHERE seq = ?"
	args := []any{seq}
	if !l.seesAll(who) {
		query += " AND principal = ?"
		args = append(args, who.Principal)
	}
	recs, err := l.read(ctx, query, args...)
	switch {
	case err != nil:
		return Record{}, err
	case len(recs) == 0:
		return Record{}, ErrNotFound
	}
	return recs[0], nil
}

// Replay replays record id on the Replayer.
func (l *SQL) Replay(ctx context.Context, id string, who *actions.Caller) (Replay, error) {
	if l.Replayer == nil {
		return Replay{}, errors.ErrUnsupported
	}
	r, err := l.Record(ctx, id, who)
	if err != nil {
		return Replay{}, err
	}
	_, err = l.Replayer.Replay(ctx, r.raw)
	var d *actions.Divergence
	switch {
	case err == nil:
		return Replay{Same: true}, nil
	case errors.As(err, &d):
		return Replay{Path: d.Path, Want: d.Want, Got: d.Got}, nil
	}
	return Replay{}, err
}

var _ Backend = (*SQL)(nil)
