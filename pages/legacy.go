package pages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
)

// Legacy is a [Backend] on today's call path: a registry whose gate keeps
// its pending changes in a [sqlstore.Store] (GateOptions.Pending =
// Store.Pending()), and whose calls are recorded in that store's run log.
// It is to be replaced by a backend on the library's one call path.
//
// What the library lacks, and Legacy makes up for by reading the store's
// tables (docs/database.md) itself:
//   - a listing of a principal's pending changes (it reads
//     actions_pending);
//   - the run log newest first with a cursor, by refusal code, and by
//     "confirmed" or "rejected" (it queries actions_run_log);
//   - whether a change someone cannot confirm expired or was decided (the
//     registry answers unknown_change to both: it reads the change, and
//     the log's record of its confirmation).
//
// A rejection leaves no record in today's log: "rejected" selects the held
// calls whose change is neither pending nor confirmed (rejected, or
// expired and dropped).
type Legacy[C any] struct {
	// Registry gives the actions' text and policy, and rejects.
	Registry *actions.Registry[C]
	// Store holds the pending changes and the run log.
	Store *sqlstore.Store
	// Confirm runs the confirmation of change id as who (for instance
	// sqlstore.Runner.Confirm with the host's TxHost), with who as the
	// host's Caller.
	Confirm func(ctx context.Context, id string, who *actions.Caller) (any, actions.RunEntry, error)
	// ReplayHost, when set, offers replay: the host a record's call
	// replays on (a transaction rolled back, a fresh model).
	ReplayHost func(ctx context.Context, r Record) *actions.Host[C]
	// SeesAll tells who may read every record of the log; the others
	// read their own calls only. Nil: nobody sees all.
	SeesAll func(who *actions.Caller) bool
	// Now is the gate's clock (nil: time.Now): expiry is decided on it.
	Now func() time.Time

	mu      sync.Mutex
	decided map[string]string // change id → principal, for ErrDecided
}

const heldCode = string(actions.CodeConfirmationRequired)

func (l *Legacy[C]) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Legacy[C]) q(s string) string { return l.Store.Dialect().Rebind(s) }

// Pending lists who's changes that have not expired, newest first (at
// most 500).
func (l *Legacy[C]) Pending(ctx context.Context, who *actions.Caller) ([]Change, error) {
	if who == nil || who.Principal == "" {
		return nil, nil
	}
	rows, err := l.Store.DB().QueryContext(ctx,
		l.q("SELECT change FROM actions_pending WHERE principal = ? AND expires > ? ORDER BY expires DESC LIMIT 500"),
		who.Principal, l.now().UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		var pc actions.PendingChange
		if err := json.Unmarshal([]byte(text), &pc); err != nil {
			return nil, fmt.Errorf("pages: a pending change does not decode: %w", err)
		}
		out = append(out, l.change(pc))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Change) int { return b.Created.Compare(a.Created) })
	return out, nil
}

func (l *Legacy[C]) change(pc actions.PendingChange) Change {
	call := Call{Action: pc.Action, Alias: pc.Alias, Parameters: pc.Parameters, Effect: "write", Destructive: true}
	if a, ok := l.Registry.Get(pc.Action); ok {
		d := a.Definition
		call.Title, call.Description = d.Title, d.Description
		call.Effect, call.Destructive = string(d.EffectOf()), d.IsDestructive()
	}
	return Change{ID: pc.ID, Proposer: whoOf(&pc.Proposer), Created: pc.Created, Expires: pc.Expires, Calls: []Call{call}}
}

func whoOf(c *actions.Caller) Who {
	w := Who{Principal: c.Principal, Surface: string(c.Surface)}
	if c.Client != nil {
		w.Client = c.Client.ID
	}
	return w
}

// Change returns who's change id.
func (l *Legacy[C]) Change(ctx context.Context, id string, who *actions.Caller) (Change, error) {
	if who == nil || who.Principal == "" {
		return Change{}, ErrNotFound
	}
	pc, err := l.Registry.PendingChange(ctx, id, who)
	if err == nil {
		return l.change(pc), nil
	}
	if !errors.Is(err, actions.ErrUnknownChange) {
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

func (l *Legacy[C]) wasDecided(ctx context.Context, id, principal string) bool {
	l.mu.Lock()
	p, ok := l.decided[id]
	l.mu.Unlock()
	if ok {
		return p == principal
	}
	var n int
	err := l.Store.DB().QueryRowContext(ctx,
		l.q("SELECT COUNT(*) FROM actions_run_log WHERE pending_change = ? AND principal = ? AND error <> ?"),
		id, principal, heldCode).Scan(&n)
	return err == nil && n > 0
}

// maxDecided bounds the changes Legacy remembers deciding.
const maxDecided = 10000

func (l *Legacy[C]) remember(id, principal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.decided == nil || len(l.decided) >= maxDecided {
		l.decided = map[string]string{}
	}
	l.decided[id] = principal
}

// Decide confirms through l.Confirm, or rejects through the registry.
func (l *Legacy[C]) Decide(ctx context.Context, id string, confirm bool, who *actions.Caller) (Decision, error) {
	if _, err := l.Change(ctx, id, who); err != nil {
		return Decision{}, err
	}
	if !confirm {
		if err := l.Registry.Reject(ctx, id, who); err != nil {
			return Decision{}, l.undecided(ctx, id, who, err)
		}
		l.remember(id, who.Principal)
		return Decision{}, nil
	}
	if l.Confirm == nil {
		return Decision{}, errors.New("pages: Legacy.Confirm is not set")
	}
	_, entry, err := l.Confirm(ctx, id, who)
	if entry.Action == "" && err != nil {
		return Decision{}, l.undecided(ctx, id, who, err)
	}
	l.remember(id, who.Principal)
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

// undecided maps the error of a decision that ran nothing.
func (l *Legacy[C]) undecided(ctx context.Context, id string, who *actions.Caller, err error) error {
	if errors.Is(err, actions.ErrUnknownChange) {
		if _, cerr := l.Change(ctx, id, who); cerr != nil {
			return cerr
		}
		return ErrDecided // taken by someone else between the two reads
	}
	return err
}

// confirmation is the id of the newest record confirming change id.
func (l *Legacy[C]) confirmation(ctx context.Context, id string) string {
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
func (l *Legacy[C]) Records(ctx context.Context, q Query, who *actions.Caller) (RecordPage, error) {
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
		add("l.outcome = ? AND l.error <> ?", string(actions.OutcomeRefused), heldCode)
		if q.Code != "" {
			add("l.error = ?", q.Code)
		}
	case "held":
		add("l.error = ?", heldCode)
	case "confirmed":
		add("l.pending_change <> '' AND l.error <> ?", heldCode)
	case "rejected":
		add("l.error = ? AND NOT EXISTS (SELECT 1 FROM actions_run_log c WHERE c.pending_change = l.pending_change AND c.error <> ?)"+
			" AND NOT EXISTS (SELECT 1 FROM actions_pending p WHERE p.id = l.pending_change)", heldCode, heldCode)
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

func (l *Legacy[C]) seesAll(who *actions.Caller) bool { return l.SeesAll != nil && l.SeesAll(who) }

func (l *Legacy[C]) read(ctx context.Context, query string, args ...any) ([]Record, error) {
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
		}
		if err := json.Unmarshal([]byte(r.Text), &r.Entry); err != nil {
			return nil, fmt.Errorf("pages: record %d: the entry does not decode: %w", seq, err)
		}
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
func (l *Legacy[C]) Record(ctx context.Context, id string, who *actions.Caller) (Record, error) {
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

// Replay replays record id on ReplayHost's host.
func (l *Legacy[C]) Replay(ctx context.Context, id string, who *actions.Caller) (Replay, error) {
	if l.ReplayHost == nil {
		return Replay{}, errors.ErrUnsupported
	}
	r, err := l.Record(ctx, id, who)
	if err != nil {
		return Replay{}, err
	}
	_, err = l.Registry.Replay(ctx, r.Entry, l.ReplayHost(ctx, r))
	var d *actions.Divergence
	switch {
	case err == nil:
		return Replay{Same: true}, nil
	case errors.As(err, &d):
		return Replay{Path: d.Path, Want: d.Want, Got: d.Got}, nil
	}
	return Replay{}, err
}

var _ Backend = (*Legacy[any])(nil)
