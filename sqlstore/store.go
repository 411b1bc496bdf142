package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// Dialect names the SQL a database speaks. The store writes each query in
// both and picks one; it never looks at the driver.
type Dialect int

// The dialects a Store speaks.
const (
	// SQLite, as modernc.org/sqlite (pure Go) or any SQLite 3.35+ driver.
	SQLite Dialect = iota + 1
	// PostgreSQL 10 or later, as github.com/jackc/pgx/v5/stdlib.
	PostgreSQL
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

// Rebind rewrites the ? bind parameters of q as $1, $2... for PostgreSQL,
// and returns q as it is for SQLite, so that a host writes its own
// queries once. q must hold no ? inside a string literal or a comment.
func (d Dialect) Rebind(q string) string {
	if d != PostgreSQL {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Options configures a [Store]. The zero value is ready.
type Options struct {
	// Isolation is the isolation level of the transactions
	// [Store.Atomic] opens (default sql.LevelSerializable). SQLite transactions are
	// serializable whatever this says.
	Isolation sql.IsolationLevel
	// MaxAttempts bounds how many times [Store.Atomic] tries one unit (a
	// call, a batch, a decision) whose transaction failed on a conflict (a serialization
	// failure, a deadlock, SQLITE_BUSY): default 20, the first try
	// included.
	MaxAttempts int
	// Backoff is the wait before attempt n+1 (n = 1 after the first
	// failure). Default: [DefaultBackoff].
	Backoff func(n int) time.Duration
	// Serial runs the store's units one at a time across every process
	// sharing the database. On PostgreSQL a session advisory lock is
	// taken before each transaction begins (so its snapshot sees the
	// previous unit's commit) and released after it ends: hot rows never
	// conflict, and the log's order is the order the units ran in, so
	// replaying it in order gives every read what it saw. On SQLite it
	// changes nothing: open the database with _txlock=immediate, whose
	// write lock does the same (see docs/database.md).
	Serial bool
	// Origin is written beside each record: which process or replica
	// wrote it (a host name, a replica's name). Default "".
	Origin string
	// Now stamps each record's recorded_at (default time.Now).
	Now func() time.Time
	// BeforeCommit, when set, runs in each unit's transaction after its
	// records are appended and just before the commit: a host writes
	// there what must commit with the unit (an outbox row), or checks an
	// invariant. Its error rolls the attempt back and is handled as the
	// unit's own (a conflict is retried). It may be called concurrently.
	BeforeCommit func(ctx context.Context, tx *sql.Tx) error
	// Writers bounds the units ([Store.Atomic], [Store.Write]) that run
	// at once in this process; the others wait in a queue, first come,
	// first served, without holding a connection or polling for a lock.
	// Zero: the database's SetMaxOpenConns when it set one (one for the
	// write pool of [OpenSQLite], or an SQLite memory database on one
	// connection), no bound otherwise. Negative: no bound, no queue.
	Writers int
	// Readers is the pool [Store.View], and [Store.Read] outside a unit,
	// read from (default: the store's database): on SQLite, the read
	// pool of [OpenSQLite], so that reads never wait in the writers'
	// queue.
	Readers *sql.DB
	// Order is how the log's Seq is drawn on PostgreSQL (default
	// [OrderCommit]); see [Order] and docs/database.md.
	Order Order
}

// Store keeps run entries in one SQL table, actions_run_log (see
// docs/database.md for its layout). It is safe for concurrent use. It
// imports no driver: the host opens the *sql.DB with the driver it
// chooses and tells the dialect.
type Store struct {
	db      *sql.DB
	dialect Dialect
	opts    Options
	insert1 string // the insert of one record
	origin  any    // Options.Origin, the origin column's bound value
	writers queue  // Options.Writers
	readers *sql.DB

	// insert is insert1 prepared on db by Migrate (nil before, or when
	// preparing failed: Append then sends the text); insertPlain is
	// insertPlainQuery's, for a plain record.
	insert, insertPlain atomic.Pointer[sql.Stmt]
}

// New returns a store on db speaking dialect. opts may be nil. Call
// [Store.Migrate] once before use.
func New(db *sql.DB, dialect Dialect, opts *Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: New needs a database")
	}
	if dialect != SQLite && dialect != PostgreSQL {
		return nil, fmt.Errorf("sqlstore: unknown dialect %d", int(dialect))
	}
	s := &Store{db: db, dialect: dialect}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Isolation == sql.LevelDefault {
		s.opts.Isolation = sql.LevelSerializable
	}
	if s.opts.MaxAttempts <= 0 {
		s.opts.MaxAttempts = defaultMaxAttempts
	}
	if s.opts.Backoff == nil {
		s.opts.Backoff = DefaultBackoff
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.Order != OrderCommit && s.opts.Order != OrderLocks {
		return nil, fmt.Errorf("sqlstore: unknown Options.Order %d", int(s.opts.Order))
	}
	s.insert1 = s.insertQuery(1)
	s.origin = s.opts.Origin
	s.writers = newQueue(db, s.opts.Writers)
	s.readers = db
	if s.opts.Readers != nil {
		s.readers = s.opts.Readers
	}
	return s, nil
}

// errNotMade is the error of a Store not made by New.
var errNotMade = errors.New("sqlstore: the Store was not made by New")

// made refuses a Store not made by New (its zero value), which has no
// database to write to.
func (s *Store) made() error {
	if s == nil || s.db == nil {
		return errNotMade
	}
	return nil
}

// DB returns the database the store writes to.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect returns the store's dialect.
func (s *Store) Dialect() Dialect { return s.dialect }

// Record is one row of the run log: the registry's record (entry, audit,
// rolled back or not) and what the store keeps beside it.
type Record struct {
	store.Record
	// Seq is the record's place in the log, given by the store: it grows
	// in the order records were committed (see docs/database.md).
	Seq int64
	// RecordedAt is when the store wrote the record, to the microsecond.
	RecordedAt time.Time
	// Unit is the id of the unit (call, batch, decision) the record
	// belongs to, whatever the attempts.
	Unit string
	// Position is the record's index in its unit: 0 for a call, the
	// step's index for a batch.
	Position int
	// Origin is the Options.Origin of the store that wrote the record
	// (which replica, say).
	Origin string
	// Text is the entry's canonical JSON (RFC 8785), byte for byte as it
	// was written.
	Text string
}

// NewUnit returns a fresh unit id: 32 hexadecimal digits, the first 12
// the milliseconds since 1970 (UTC) and the other 20 from crypto/rand,
// so that the ids a store draws one after the other sort in that order:
// each record's entry in the (unit, position) index then lands beside
// the last one's, not on a page of its own.
func NewUnit() string {
	var b [16]byte
	ms := time.Now().UnixMilli()
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// check refuses a record the log could not place.
func check(unit string, r *store.Record) error {
	switch {
	case unit == "":
		return errors.New("sqlstore: no unit")
	case r.Entry.Outcome != store.OutcomeDone && r.Entry.Outcome != store.OutcomeRefused:
		return errors.New("sqlstore: the entry's outcome is neither done nor refused")
	}
	return nil
}

// auditColumns are the audit's text and the columns drawn from it.
func auditColumns(a *store.Audit) (text, principal, surface, pending string, err error) {
	b, err := actions.CanonicalJSON(a)
	if err != nil {
		return "", "", "", "", fmt.Errorf("sqlstore: audit: %w", err)
	}
	if a.Caller != nil {
		principal, surface = a.Caller.Principal, string(a.Caller.Surface)
	}
	return ownText(b), principal, surface, a.PendingChange, nil
}

// ownText is b, which the caller owns and never changes again, as a
// string without a copy (the log's texts are bound as strings: as
// []byte a driver would store a blob).
func ownText(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Append writes the records of one unit inside tx, the host's
// transaction, at positions 0, 1, ...: they are committed or rolled back
// with it. On PostgreSQL it first takes a transaction-scoped advisory
// lock, held until tx ends, so that records are numbered in the order
// their transactions commit: a reader that follows the log by Seq never
// skips a record committed late.
//
// Errors, before anything is written: an empty unit, an entry whose
// outcome is neither done nor refused, an entry or audit without
// canonical JSON form. Then a unit and position already in the log (the
// unique key), or the database's.
func (s *Store) Append(ctx context.Context, tx *sql.Tx, unit string, recs ...store.Record) error {
	if err := s.made(); err != nil {
		return err
	}
	return s.append(ctx, tx, false, unit, recs...)
}

// append is Append; own says that tx is a transaction of the store's
// database, where the insert of one record runs as a statement prepared
// once per connection (on SQLite, parsing it was a fifth of a call's
// time in memory: docs/performance.md). It is prepared by Migrate, not
// here: preparing on the database takes a connection, which a pool of
// one (SQLite's writer) has lent to tx.
func (s *Store) append(ctx context.Context, tx *sql.Tx, own bool, unit string, recs ...store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	for i := range recs {
		if err := check(unit, &recs[i]); err != nil {
			return fmt.Errorf("sqlstore: record %d: %w", i, err)
		}
	}
	if s.dialect == PostgreSQL && s.opts.Order == OrderCommit {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", appendLockKey); err != nil {
			return err
		}
	}
	now := s.opts.Now().UnixMicro()
	for start := 0; start < len(recs); start += maxRowsPerInsert {
		chunk := recs[start:min(start+maxRowsPerInsert, len(recs))]
		args := make([]any, 0, len(chunk)*columnsPerRow)
		for k := range chunk {
			r := &chunk[k]
			text, err := actions.CanonicalJSON(r.Entry)
			if err != nil {
				return fmt.Errorf("sqlstore: entry: %w", err)
			}
			audit, principal, surface, pendingChange, err := auditColumns(&r.Audit)
			if err != nil {
				return err
			}
			// The order of insertColumns: the columns a plain record
			// leaves empty last.
			args = append(args, now, unit, start+k, s.origin, r.Entry.Action, outcomeArg(r.Entry.Outcome),
				r.RolledBack, audit, ownText(text),
				string(r.Entry.Error), principal, surface, pendingChange, string(r.Audit.Stage))
		}
		if len(chunk) == 1 && own {
			stmt, n := s.insert.Load(), columnsPerRow
			if plain := s.insertPlain.Load(); plain != nil && isPlain(args) {
				stmt, n = plain, plainColumns
			}
			if stmt != nil {
				if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args[:n]...); err != nil {
					return err
				}
				continue
			}
		}
		q := s.insert1
		if len(chunk) > 1 {
			q = s.insertQuery(len(chunk))
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// isPlain reports whether the row args holds (one record, in the order
// of insertColumns) leaves the columns after plainColumns empty: a call
// that is done, with no caller, pending change or stage (a host's own
// call), which the plain insert writes with fewer bound values.
func isPlain(args []any) bool {
	for _, v := range args[plainColumns:] {
		if v != "" {
			return false
		}
	}
	return true
}

// outcomeArg is the outcome column's bound value, boxed once: check has
// let only done and refused through.
func outcomeArg(o store.Outcome) any {
	if o == store.OutcomeRefused {
		return string(store.OutcomeRefused)
	}
	return string(store.OutcomeDone)
}

// Write appends the records of one unit in a transaction of their own,
// retried on conflicts like a unit's, in the writers' queue
// (Options.Writers) as a unit.
func (s *Store) Write(ctx context.Context, unit string, recs ...store.Record) error {
	if err := s.made(); err != nil {
		return err
	}
	if err := s.writers.enter(ctx); err != nil {
		return err
	}
	defer s.writers.leave()
	return s.write(ctx, unit, recs...)
}

// write is Write for a caller that holds its slot in the queue.
func (s *Store) write(ctx context.Context, unit string, recs ...store.Record) error {
	return s.writeWith(ctx, unit, nil, recs...)
}

// writeWith is write, running extra (when not nil) in the same
// transaction after the records are appended.
func (s *Store) writeWith(ctx context.Context, unit string, extra func(ctx context.Context, tx *sql.Tx) error, recs ...store.Record) error {
	return s.retry(ctx, func(int) error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: s.opts.Isolation})
		if err != nil {
			return err
		}
		if err := s.append(ctx, tx, true, unit, recs...); err != nil {
			_ = tx.Rollback()
			return err
		}
		if extra != nil {
			if err := extra(ctx, tx); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	})
}

// appendLockKey is the PostgreSQL advisory lock that orders appends
// ("actions" in ASCII).
const appendLockKey int64 = 0x616374696f6e73

// serialLockKey is the session advisory lock of Options.Serial.
const serialLockKey int64 = 0x616374696f6e75

// migrateLockKey serialises migrations of replicas starting together.
const migrateLockKey int64 = 0x616374696f6e74

const (
	columnsPerRow    = 14
	maxRowsPerInsert = 500
	// plainColumns are the columns of insertColumns a plain record
	// binds (isPlain); the others are empty.
	plainColumns = 9
)

// insertColumns are the log's columns an append writes, in the order of
// its bound values.
const insertColumns = "recorded_at, unit, position, origin, action, outcome, rolled_back, audit, entry, error, principal, surface, pending_change, stage"

// insertPlainQuery is the insert of one plain record (isPlain): its
// empty columns are written as literals, not bound.
func (s *Store) insertPlainQuery() string {
	var b strings.Builder
	b.WriteString("INSERT INTO actions_run_log (" + insertColumns + ") VALUES (")
	for j := range plainColumns {
		b.WriteString(s.param(j+1) + ", ")
	}
	b.WriteString(strings.Repeat("'', ", columnsPerRow-plainColumns-1) + "'')")
	return b.String()
}

// insertQuery is the insert of n records.
func (s *Store) insertQuery(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO actions_run_log (" + insertColumns + ") VALUES ")
	p := 0
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range columnsPerRow {
			if j > 0 {
				b.WriteString(", ")
			}
			p++
			b.WriteString(s.param(p))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// param is the n-th (1-based) bind parameter.
func (s *Store) param(n int) string {
	if s.dialect == PostgreSQL {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Kept selects records by what became of their unit.
type Kept int

// The choices of Filter.Kept.
const (
	// KeptOnly: records of committed units only, what a replay applies
	// (the zero value).
	KeptOnly Kept = iota
	// UndoneOnly: records of rolled-back units only, the audit trail of
	// undone calls.
	UndoneOnly
	// KeptAndUndone: every record.
	KeptAndUndone
)

// Filter selects records. Zero fields select everything.
type Filter struct {
	// Action keeps the entries of this action id.
	Action string
	// Outcome keeps the entries with this outcome (done or refused).
	Outcome store.Outcome
	// Since and Until keep records written at or after Since and before
	// Until.
	Since, Until time.Time
	// After keeps records whose Seq is greater: a reader that follows the
	// log passes the last Seq it read. Before keeps those whose Seq is
	// smaller: a page of the log newest first passes the last Seq shown.
	After, Before int64
	// Newest returns the records newest first (by Seq, descending).
	Newest bool
	// Code keeps the entries refused with this code (the host's code).
	Code codes.Code
	// Unit keeps the records of one call or batch.
	Unit string
	// Origin keeps the records written by the stores of this origin.
	Origin string
	// Principal keeps the calls of this principal (Audit.Caller).
	Principal string
	// Stages keeps the records whose Audit.Stage is one of these: calls
	// held for confirmation (store.StageHeld), confirmed or rejected.
	// An empty stage in the list stands for the calls that touched no
	// pending change. Nil or empty: any stage.
	Stages []store.Stage
	// PendingChange keeps the records of the calls that were held as,
	// confirmed or rejected this pending change (Audit.PendingChange).
	PendingChange string
	// Kept keeps committed records (the default), rolled-back ones, or
	// both.
	Kept Kept
	// Limit bounds the records returned (0: no bound; negative: an
	// error).
	Limit int
}

// Read returns the records f selects, in log order (by Seq), inside the
// transaction ctx carries when it carries one ([Store.View], a unit),
// from the database otherwise. Each entry is decoded from its text; a
// text that does not decode (a row written by hand) is an error naming
// its seq; so is a Filter.Kept other than the three choices, or a
// negative Filter.Limit.
func (s *Store) Read(ctx context.Context, f Filter) ([]Record, error) {
	if err := s.made(); err != nil {
		return nil, err
	}
	switch {
	case f.Kept < KeptOnly || f.Kept > KeptAndUndone:
		return nil, fmt.Errorf("sqlstore: unknown Filter.Kept %d", int(f.Kept))
	case f.Limit < 0:
		return nil, errors.New("sqlstore: negative Filter.Limit")
	}
	where, args := f.where(s.param)
	q := "SELECT seq, recorded_at, unit, position, origin, rolled_back, audit, entry FROM actions_run_log" + where + " ORDER BY seq"
	if f.Newest {
		q += " DESC"
	}
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	var db interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	} = s.readers
	if tx, ok := Tx(ctx); ok {
		db = tx
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// where is the WHERE clause (with its leading space, or empty) and the
// arguments of what f selects, bind parameters written by param.
func (f Filter) where(param func(int) string) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", param(len(args))))
	}
	for _, c := range []struct {
		set  bool
		cond string
		v    any
	}{
		{f.Action != "", "action = ?", f.Action},
		{f.Outcome != "" && f.Outcome != store.OutcomeRefused, "outcome = ?", string(f.Outcome)},
		{f.Code != "", "error = ?", string(f.Code)},
		{!f.Since.IsZero(), "recorded_at >= ?", f.Since.UnixMicro()},
		{!f.Until.IsZero(), "recorded_at < ?", f.Until.UnixMicro()},
		{f.After > 0, "seq > ?", f.After},
		{f.Before > 0, "seq < ?", f.Before},
		{f.Unit != "", "unit = ?", f.Unit},
		{f.Origin != "", "origin = ?", f.Origin},
		{f.Principal != "", "principal = ?", f.Principal},
		{f.PendingChange != "", "pending_change = ?", f.PendingChange},
		{f.Kept == KeptOnly, "rolled_back = ?", false},
		{f.Kept == UndoneOnly, "rolled_back = ?", true},
	} {
		if c.set {
			add(c.cond, c.v)
		}
	}
	// The partial indexes' own conditions, written out so that the
	// database may use them: a bound value proves nothing.
	if f.Outcome == store.OutcomeRefused {
		conds = append(conds, "outcome = 'refused'")
	}
	if f.PendingChange != "" {
		conds = append(conds, "pending_change <> ''")
	}
	if f.Principal != "" {
		conds = append(conds, "principal <> ''")
	}
	if len(f.Stages) > 0 {
		ins := make([]string, len(f.Stages))
		for i, st := range f.Stages {
			args = append(args, string(st))
			ins[i] = param(len(args))
		}
		conds = append(conds, "stage IN ("+strings.Join(ins, ", ")+")")
		if !slices.Contains(f.Stages, "") {
			conds = append(conds, "stage <> ''")
		}
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// scanRecord reads one row of Read's query.
func scanRecord(rows *sql.Rows) (Record, error) {
	var r Record
	var at int64
	var audit string
	if err := rows.Scan(&r.Seq, &at, &r.Unit, &r.Position, &r.Origin, &r.RolledBack, &audit, &r.Text); err != nil {
		return Record{}, err
	}
	r.RecordedAt = time.UnixMicro(at).UTC()
	if audit != "{}" {
		if err := json.Unmarshal([]byte(audit), &r.Audit); err != nil {
			return Record{}, fmt.Errorf("sqlstore: record %d: the audit does not decode: %w", r.Seq, err)
		}
	}
	if err := json.Unmarshal([]byte(r.Text), &r.Entry); err != nil {
		return Record{}, fmt.Errorf("sqlstore: record %d: the entry does not decode: %w", r.Seq, err)
	}
	return r, nil
}
