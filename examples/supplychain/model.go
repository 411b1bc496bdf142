package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for -db postgres://...
	_ "modernc.org/sqlite"             // the "sqlite" driver: pure Go, the default

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
)

// Actor is one actor of the supply chain: a plant, a warehouse, a depot or
// a supplier. Key is the model's own handle (what a ref resolves to); ID is
// the stable name people and models use; DisplayName maps a language tag to
// the actor's name in that language.
type Actor struct {
	Key         string            `json:"key"`
	ID          string            `json:"id"`
	Type        string            `json:"type"`
	DisplayName map[string]string `json:"display_name"`
}

// Emission is the CO2 an actor emitted in one period, in tonnes.
type Emission struct {
	Actor  string  `json:"actor"` // the actor's key
	Period string  `json:"period"`
	CO2t   float64 `json:"co2_t"`
}

// Model is the example's data set in a SQL database (SQLite, embedded, by
// default; PostgreSQL with -db postgres://...): the tables sc_actors,
// sc_emissions and sc_counters beside the run log of sqlstore. A Model is
// bound to the database (each statement commits on its own) or, through
// On, to one transaction: the Registry gives each call or batch its own.
type Model struct {
	db        *sql.DB
	read      *sql.DB // the store's readers: db, or an SQLite file's read pool
	dialect   sqlstore.Dialect
	q         queryer // db, or the transaction of On
	languages []string
	store     *sqlstore.Store
}

// queryer is what *sql.DB and *sql.Tx both offer.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// errIDTaken is returned by CreateActor for an id already used.
var errIDTaken = errors.New("the id is taken")

// modelFile is the shape of model.json.
type modelFile struct {
	Languages []string   `json:"languages"`
	Actors    []Actor    `json:"actors"`
	Emissions []Emission `json:"emissions"`
}

// readModelFile decodes a model file (see model.json): the dataset's
// languages, source language first, its actors and their emissions. It
// refuses unknown fields, repeated keys or ids, and emissions of unknown
// actors.
func readModelFile(data []byte) (*modelFile, error) {
	var file modelFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if len(file.Languages) == 0 {
		return nil, errors.New("model: no language")
	}
	keys, ids := map[string]bool{}, map[string]bool{}
	for i, a := range file.Actors {
		if a.Key == "" || keys[a.Key] || ids[a.ID] {
			return nil, fmt.Errorf("model: actor %d: empty or repeated key or id", i)
		}
		keys[a.Key], ids[a.ID] = true, true
	}
	for i, e := range file.Emissions {
		if !keys[e.Actor] {
			return nil, fmt.Errorf("model: emission %d: unknown actor %s", i, e.Actor)
		}
	}
	return &file, nil
}

// maxIdlePostgreSQL is how many idle connections a PostgreSQL pool
// keeps: as many as the units a replica typically runs at once.
const maxIdlePostgreSQL = 32

// memoryDSN is the default database: SQLite in memory, on one connection
// (each connection to :memory: is a database of its own).
const memoryDSN = ":memory:"

// openDB opens the database a -db value names: "" or ":memory:" for
// SQLite in memory, postgres://... or postgresql://... for PostgreSQL
// (pgx), any other value as the path of an SQLite file, opened by
// sqlstore.OpenSQLite: one writer, whose units the store queues in order,
// and a pool of readers (read; db itself for the other engines).
func openDB(dsn string) (db, read *sql.DB, dialect sqlstore.Dialect, err error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, nil, 0, err
		}
		// database/sql keeps two idle connections by default: under a
		// few more concurrent calls than that, connections would be
		// closed after each unit and opened again, a new server process
		// each time.
		db.SetMaxIdleConns(maxIdlePostgreSQL)
		return db, db, sqlstore.PostgreSQL, nil
	case dsn == "" || dsn == memoryDSN:
		db, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)")
		if err != nil {
			return nil, nil, 0, err
		}
		db.SetMaxOpenConns(1)
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
		return db, db, sqlstore.SQLite, nil
	default:
		db, read, err := sqlstore.OpenSQLite("sqlite", dsn)
		return db, read, sqlstore.SQLite, err
	}
}

// OpenModel opens the database dsn names (see openDB), creates the
// model's tables and the run log's when they are missing, and seeds the
// model from the model file seed when it is empty. Replicas may open one
// database at once: one seeds, the others find it seeded. origin names
// the writer in the run log. The store runs its units side by side
// (sqlstore.OrderLocks); see OpenModelSerial for one at a time.
func OpenModel(ctx context.Context, dsn string, seed []byte, origin string) (*Model, error) {
	return openModel(ctx, dsn, seed, origin, false)
}

// OpenModelSerial is OpenModel whose store runs one unit at a time across
// every process sharing the database (sqlstore.Options.Serial), as
// "serve -serial" does: the strongest order, and the slowest.
func OpenModelSerial(ctx context.Context, dsn string, seed []byte, origin string) (*Model, error) {
	return openModel(ctx, dsn, seed, origin, true)
}

func openModel(ctx context.Context, dsn string, seed []byte, origin string, serial bool) (*Model, error) {
	file, err := readModelFile(seed)
	if err != nil {
		return nil, err
	}
	db, read, dialect, err := openDB(dsn)
	if err != nil {
		return nil, err
	}
	m := &Model{db: db, read: read, dialect: dialect, q: db, languages: file.Languages}
	// OrderLocks: units run and commit side by side, on every replica,
	// and the log's Seq is drawn under the locks each unit holds; the
	// bodies lock what they read (locks.go), so that replaying the log in
	// Seq order gives every read what it saw. Read committed: each
	// statement sees what committed before it, in particular what the
	// unit whose lock it waited for wrote (docs/database.md). Serial
	// instead runs one unit at a time.
	opts := &sqlstore.Options{Origin: origin, Readers: read, Order: sqlstore.OrderLocks, Isolation: sql.LevelReadCommitted}
	if serial {
		opts = &sqlstore.Options{Origin: origin, Readers: read, Serial: true}
	}
	m.store, err = sqlstore.New(db, dialect, opts)
	if err == nil {
		err = m.store.Migrate(ctx)
	}
	if err == nil {
		// The tasks and keyed calls this replica ran before it stopped
		// cannot be running now: they are answered outcome_unknown
		// (docs/database.md), never run again.
		_, err = m.store.SettleOrphans(ctx, origin, time.Now())
	}
	if err == nil {
		err = m.migrate(ctx, file)
	}
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// LoadModel returns a fresh model in memory (SQLite), seeded from a model
// file.
func LoadModel(data []byte) (*Model, error) {
	return OpenModel(context.Background(), memoryDSN, data, "")
}

// Close closes the model's database (its pools).
func (m *Model) Close() error {
	err := m.db.Close()
	if m.read != m.db {
		err = errors.Join(err, m.read.Close())
	}
	return err
}

// Store is the run log in the model's database.
func (m *Model) Store() *sqlstore.Store { return m.store }

// On returns the model bound to tx.
func (m *Model) On(tx *sql.Tx) *Model {
	c := *m
	c.q = tx
	return &c
}

// modelTables are the model's tables, in both dialects (DOUBLE PRECISION
// is REAL to SQLite).
var modelTables = []string{
	`CREATE TABLE IF NOT EXISTS sc_actors (
		actor_key TEXT PRIMARY KEY,
		id TEXT NOT NULL UNIQUE,
		type TEXT NOT NULL,
		display_name TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS sc_emissions (
		actor_key TEXT NOT NULL REFERENCES sc_actors (actor_key),
		period TEXT NOT NULL,
		co2_t DOUBLE PRECISION NOT NULL,
		PRIMARY KEY (actor_key, period))`,
	`CREATE TABLE IF NOT EXISTS sc_counters (
		name TEXT PRIMARY KEY,
		next BIGINT NOT NULL)`,
	// Each display name of each actor, so that a ref resolves by one
	// indexed lookup, not by reading every actor.
	`CREATE TABLE IF NOT EXISTS sc_actor_names (
		name TEXT NOT NULL,
		actor_key TEXT NOT NULL,
		PRIMARY KEY (name, actor_key))`,
}

// migrate creates the tables and seeds them once, in one transaction.
func (m *Model) migrate(ctx context.Context, file *modelFile) error {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if m.dialect == sqlstore.PostgreSQL {
		// Replicas starting together: one creates and seeds, the others wait.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7370)"); err != nil {
			return err
		}
	}
	for _, q := range modelTables {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	res, err := tx.ExecContext(ctx, m.bind("INSERT INTO sc_counters (name, next) VALUES ('actor', ?) ON CONFLICT (name) DO NOTHING"), len(file.Actors)+1)
	if err != nil {
		return err
	}
	seeded := m.On(tx)
	if n, _ := res.RowsAffected(); n == 0 {
		// Seeded already: a database from before the names table gets
		// it filled once.
		if err := seeded.fillNames(ctx); err != nil {
			return err
		}
		return tx.Commit()
	}
	for _, a := range file.Actors {
		if err := seeded.insertActor(ctx, a); err != nil {
			return err
		}
	}
	for _, e := range file.Emissions {
		if _, _, err := seeded.SetEmissions(ctx, e.Actor, e.Period, e.CO2t); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// bind rewrites the ? parameters of q as $1, $2... for PostgreSQL.
func (m *Model) bind(q string) string {
	return m.dialect.Rebind(q)
}

func (m *Model) insertActor(ctx context.Context, a Actor) error {
	names, err := actions.CanonicalJSON(a.DisplayName)
	if err != nil {
		return err
	}
	if _, err = m.q.ExecContext(ctx, m.bind("INSERT INTO sc_actors (actor_key, id, type, display_name) VALUES (?, ?, ?, ?)"), a.Key, a.ID, a.Type, string(names)); err != nil {
		return err
	}
	return m.insertNames(ctx, a)
}

// insertNames indexes an actor's display names, each once.
func (m *Model) insertNames(ctx context.Context, a Actor) error {
	seen := map[string]bool{}
	for _, name := range a.DisplayName {
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, err := m.q.ExecContext(ctx, m.bind("INSERT INTO sc_actor_names (name, actor_key) VALUES (?, ?)"), name, a.Key); err != nil {
			return err
		}
	}
	return nil
}

// fillNames indexes the names of every actor when the index is empty.
func (m *Model) fillNames(ctx context.Context) error {
	var n int
	if err := m.q.QueryRowContext(ctx, "SELECT count(*) FROM sc_actor_names").Scan(&n); err != nil || n > 0 {
		return err
	}
	all, err := m.actors(ctx, "SELECT actor_key, id, type, display_name FROM sc_actors")
	if err != nil {
		return err
	}
	for _, a := range all {
		if err := m.insertNames(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Languages returns the dataset's languages, the source language first.
func (m *Model) Languages() []string { return append([]string(nil), m.languages...) }

// actors returns the actors the query selects (its columns: key, id,
// type, display name).
func (m *Model) actors(ctx context.Context, q string, args ...any) ([]Actor, error) {
	rows, err := m.q.QueryContext(ctx, m.bind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Actor
	for rows.Next() {
		var a Actor
		var names string
		if err := rows.Scan(&a.Key, &a.ID, &a.Type, &names); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(names), &a.DisplayName); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ResolveRef is the host's [actions.RefResolver] over the model: for the
// model schema "actor", the key of the actor whose id is value, and the
// keys of the actors whose display name, in any language, is value. The
// registry then applies the rule: an id wins, one name gives its key, no
// match or several names are refused with invalid_parameters.
func (m *Model) ResolveRef(ctx context.Context, schema, value string) (actions.RefMatches, error) {
	if schema != "actor" {
		return actions.RefMatches{}, fmt.Errorf("model: no schema %q", schema)
	}
	// Inside a unit, read in its transaction.
	if tx, ok := sqlstore.Tx(ctx); ok {
		m = m.On(tx)
	}
	// Two indexed lookups in one query: the actor whose id is value, the
	// actors one of whose names is value. Both keys are locked shared
	// first, in one statement: a create or a delete of that id or name
	// waits, or is waited for.
	if err := lock(ctx, sqlstore.LockShared, idKey(value), nameKey(value)); err != nil {
		return actions.RefMatches{}, err
	}
	rows, err := m.q.QueryContext(ctx, m.bind("SELECT 0, actor_key FROM sc_actors WHERE id = ? UNION ALL SELECT 1, actor_key FROM sc_actor_names WHERE name = ?"), value, value)
	if err != nil {
		return actions.RefMatches{}, err
	}
	defer rows.Close()
	var found actions.RefMatches
	for rows.Next() {
		var byName int
		var k string
		if err := rows.Scan(&byName, &k); err != nil {
			return actions.RefMatches{}, err
		}
		if byName == 0 {
			found.ID = &k
		} else {
			found.Names = append(found.Names, k)
		}
	}
	sort.Strings(found.Names)
	return found, rows.Err()
}

// Actor returns the actor of a key that a ref resolved in the same unit;
// ok is false when there is none. The row is read without a lock of its
// own: the resolution holds the actor's id or name key shared to the
// unit's end, and a delete takes both exclusively (locks.go), so a
// delete of it waits for the unit, or the unit for the delete. (A row
// lock here, FOR SHARE, would write the row's lock into the row, for
// every call on a hot actor.)
func (m *Model) Actor(ctx context.Context, key string) (Actor, bool, error) {
	list, err := m.actors(ctx, "SELECT actor_key, id, type, display_name FROM sc_actors WHERE actor_key = ?", key)
	if err != nil || len(list) == 0 {
		return Actor{}, false, err
	}
	return list[0], true, nil
}

// Actors returns the actors of a type ("" for all), sorted by id.
func (m *Model) Actors(ctx context.Context, typ string) ([]Actor, error) {
	return m.ActorsAfter(ctx, typ, "", 0)
}

// ActorsAfter lists at most limit actors (limit <= 0: all) of type typ
// ("" for every type) whose id sorts after after ("" for the first), by
// id: a keyset page, which a table changing between pages neither
// shifts nor repeats.
func (m *Model) ActorsAfter(ctx context.Context, typ, after string, limit int) ([]Actor, error) {
	q, args := "SELECT actor_key, id, type, display_name FROM sc_actors WHERE id > ?", []any{after}
	if typ != "" {
		q, args = q+" AND type = ?", append(args, typ)
	}
	q += " ORDER BY id"
	if limit > 0 {
		q, args = q+" LIMIT ?", append(args, limit)
	}
	// The set of actors, which creates and deletes change: locked shared.
	if err := lock(ctx, sqlstore.LockShared, actorsKey); err != nil {
		return nil, err
	}
	return m.actors(ctx, q+sqlstore.ForShare(ctx), args...)
}

// CreateActor adds an actor and returns it with its new key; errIDTaken
// when the id is used. The key comes from the counter row, updated in the
// call's transaction: two calls at once conflict there, and the one
// retried takes the next key.
//
// Inside a unit it locks, exclusively, the set of actors, the id and each
// name (locks.go), before it reads whether the id is taken.
func (m *Model) CreateActor(ctx context.Context, id, typ string, names map[string]string) (Actor, error) {
	if err := lockActor(ctx, id, names); err != nil {
		return Actor{}, err
	}
	var taken int
	if err := m.q.QueryRowContext(ctx, m.bind("SELECT count(*) FROM sc_actors WHERE id = ?"), id).Scan(&taken); err != nil {
		return Actor{}, err
	}
	if taken > 0 {
		return Actor{}, errIDTaken
	}
	var next int
	if err := m.q.QueryRowContext(ctx, "UPDATE sc_counters SET next = next + 1 WHERE name = 'actor' RETURNING next - 1").Scan(&next); err != nil {
		return Actor{}, err
	}
	a := Actor{Key: "act_" + strconv.Itoa(next), ID: id, Type: typ, DisplayName: names}
	return a, m.insertActor(ctx, a)
}

// DeleteActor removes an actor; false when there was none. Inside a unit
// it takes the actor's row FOR UPDATE, then locks its id and names as
// CreateActor does; a body deleting emissions first calls LockActor
// before.
func (m *Model) DeleteActor(ctx context.Context, key string) (bool, error) {
	if _, ok, err := m.LockActor(ctx, key); err != nil || !ok {
		return false, err
	}
	if _, err := m.q.ExecContext(ctx, m.bind("DELETE FROM sc_actor_names WHERE actor_key = ?"), key); err != nil {
		return false, err
	}
	res, err := m.q.ExecContext(ctx, m.bind("DELETE FROM sc_actors WHERE actor_key = ?"), key)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// SetEmissions sets an actor's emissions for a period and returns the
// previous value (ok false when there was none).
//
// Inside a unit it locks the period's emissions first (two units writing
// the same row, or inserting it, wait for one another rather than one
// failing on the primary key), then updates the row and reads its
// previous value (updateEmissions: one statement on PostgreSQL); an
// insert locks the actor's emissions, the range the row
// enters (locks.go). The period's lock is held to the unit's commit, so
// the statements after it are kept few: one for an update, two for an
// insert.
func (m *Model) SetEmissions(ctx context.Context, key, period string, co2t float64) (previous float64, ok bool, err error) {
	if err := lock(ctx, sqlstore.Lock, periodKey(period)); err != nil {
		return 0, false, err
	}
	previous, err = m.updateEmissions(ctx, key, period, co2t)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := lock(ctx, sqlstore.Lock, actorEmissionsKey(key)); err != nil {
			return 0, false, err
		}
		_, err = m.q.ExecContext(ctx, m.bind("INSERT INTO sc_emissions (actor_key, period, co2_t) VALUES (?, ?, ?)"), key, period, co2t)
		return 0, false, err
	case err != nil:
		return 0, false, err
	}
	return previous, true, nil
}

// updateEmissions sets the figure of an existing row and returns its
// previous one; sql.ErrNoRows when there is no such row. On PostgreSQL
// it is one statement (a round trip fewer while the period's lock is
// held): the old value read FOR UPDATE in a subquery, the latest
// committed whatever the statement's snapshot. SQLite, whose RETURNING
// sees only the updated table, reads then updates; it runs in process
// and one writer at a time.
func (m *Model) updateEmissions(ctx context.Context, key, period string, co2t float64) (previous float64, err error) {
	if m.dialect == sqlstore.PostgreSQL {
		err = m.q.QueryRowContext(ctx, m.bind("UPDATE sc_emissions SET co2_t = ? FROM (SELECT co2_t FROM sc_emissions WHERE actor_key = ? AND period = ?"+sqlstore.ForUpdate(ctx)+") AS old WHERE actor_key = ? AND period = ? RETURNING old.co2_t"),
			co2t, key, period, key, period).Scan(&previous)
		return previous, err
	}
	if err := m.q.QueryRowContext(ctx, m.bind("SELECT co2_t FROM sc_emissions WHERE actor_key = ? AND period = ?"), key, period).Scan(&previous); err != nil {
		return 0, err
	}
	_, err = m.q.ExecContext(ctx, m.bind("UPDATE sc_emissions SET co2_t = ? WHERE actor_key = ? AND period = ?"), co2t, key, period)
	return previous, err
}

// ClearEmissions removes every emission of an actor and returns how many.
// Inside a unit it locks, exclusively, the period of each of them (in
// order, as writers take them before the actor's emissions), then the
// actor's emissions, then the period of a row inserted meanwhile, if any.
func (m *Model) ClearEmissions(ctx context.Context, key string) (int, error) {
	if _, ok := sqlstore.Tx(ctx); ok {
		locked := map[string]bool{}
		lockPeriods := func() error {
			rows, err := m.q.QueryContext(ctx, m.bind("SELECT period FROM sc_emissions WHERE actor_key = ? ORDER BY period"), key)
			if err != nil {
				return err
			}
			var keys []string
			for rows.Next() {
				var p string
				if err := rows.Scan(&p); err != nil {
					rows.Close()
					return err
				}
				if !locked[p] {
					keys, locked[p] = append(keys, periodKey(p)), true
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			return sqlstore.Lock(ctx, keys...)
		}
		if err := lockPeriods(); err != nil {
			return 0, err
		}
		if err := sqlstore.Lock(ctx, actorEmissionsKey(key)); err != nil {
			return 0, err
		}
		if err := lockPeriods(); err != nil {
			return 0, err
		}
	}
	res, err := m.q.ExecContext(ctx, m.bind("DELETE FROM sc_emissions WHERE actor_key = ?"), key)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// emissions returns the emissions the query selects (its columns: actor
// key, period, tonnes).
func (m *Model) emissions(ctx context.Context, q string, args ...any) ([]Emission, error) {
	rows, err := m.q.QueryContext(ctx, m.bind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Emission
	for rows.Next() {
		var e Emission
		if err := rows.Scan(&e.Actor, &e.Period, &e.CO2t); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Emissions returns an actor's emissions, sorted by period.
// Inside a unit it locks the actor's emissions shared, and reads the rows
// FOR SHARE.
func (m *Model) Emissions(ctx context.Context, key string) ([]Emission, error) {
	if err := lock(ctx, sqlstore.LockShared, actorEmissionsKey(key)); err != nil {
		return nil, err
	}
	return m.emissions(ctx, "SELECT actor_key, period, co2_t FROM sc_emissions WHERE actor_key = ? ORDER BY period"+sqlstore.ForShare(ctx), key)
}

// Total returns the emissions of a period summed over the actors of a type
// ("" for all), and the number of actors counted. The sum is made here,
// in key order, so that it is the same double on every database.
//
// Inside a unit it locks the period's emissions shared: every write of
// one takes that key exclusively (locks.go), so the rows need no lock of
// their own.
func (m *Model) Total(ctx context.Context, period, typ string) (co2t float64, actors int, err error) {
	if err := lock(ctx, sqlstore.LockShared, periodKey(period)); err != nil {
		return 0, 0, err
	}
	q := "SELECT e.actor_key, e.period, e.co2_t FROM sc_emissions e JOIN sc_actors a ON a.actor_key = e.actor_key WHERE e.period = ?"
	args := []any{period}
	if typ != "" {
		q += " AND a.type = ?"
		args = append(args, typ)
	}
	list, err := m.emissions(ctx, q+" ORDER BY e.actor_key", args...)
	for _, e := range list {
		co2t += e.CO2t
	}
	return co2t, len(list), err
}

// Dump is the model's tables as text, one line per row in key order:
// what two databases holding the same model agree on byte for byte.
func (m *Model) Dump(ctx context.Context) (string, error) {
	var b strings.Builder
	all, err := m.Actors(ctx, "")
	if err != nil {
		return "", err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Key < all[j].Key })
	for _, a := range all {
		names, _ := actions.CanonicalJSON(a.DisplayName)
		fmt.Fprintf(&b, "actor %s %s %s %s\n", a.Key, a.ID, a.Type, names)
	}
	list, err := m.emissions(ctx, "SELECT actor_key, period, co2_t FROM sc_emissions ORDER BY actor_key, period")
	if err != nil {
		return "", err
	}
	for _, e := range list {
		fmt.Fprintf(&b, "emission %s %s %s\n", e.Actor, e.Period, strconv.FormatFloat(e.CO2t, 'g', -1, 64))
	}
	var next int
	if err := m.q.QueryRowContext(ctx, "SELECT next FROM sc_counters WHERE name = 'actor'").Scan(&next); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "next actor %d\n", next)
	return b.String(), nil
}
