package main

import (
	"context"
	"sort"

	"github.com/actionreg/actions/sqlstore"
)

// The locks the model's bodies take, so that the store can run them side
// by side under sqlstore.OrderLocks and still log them in an order whose
// replay gives every read what it saw (docs/database.md, "Replicas
// without one lock"). A row a body writes is locked by the write; a row
// it reads and keeps is read FOR SHARE (sqlstore.ForShare); and what no
// row lock covers is named by one of these keys, an advisory lock
// (sqlstore.Lock, sqlstore.LockShared) the reader takes shared and the
// writer exclusively:
//
//   - actorsKey: the set of actors, as list_actors pages it; create and
//     delete change it.
//   - idKey(id), nameKey(name): whether an id, a display name, belongs
//     to an actor, as a ref resolves and create_actor checks; create and
//     delete change it. Held shared by a ref's resolution to the unit's
//     end, they also keep the resolved actor's row from a delete, so a
//     body reads that row with no row lock (Model.Actor).
//   - periodKey(period): the emissions of a period, which
//     total_emissions sums. Every write of an emission (insert, update,
//     delete) takes it exclusively, first: the writers of one period run
//     one at a time. Row locks would let them run side by side, but a
//     unit that writes a row and then sums the period (a batch does)
//     would then deadlock with another doing the same on another row,
//     each holding the row the other must read: PostgreSQL detects it
//     only after deadlock_timeout (1 s) and aborts one for a retry.
//   - actorEmissionsKey(actor): the emissions of an actor, as get_actor
//     reads them; an insert enters the range, clear_emissions empties it.
//
// Outside a unit, in a View and on SQLite (one writer at a time) they do
// nothing.
const actorsKey = "supplychain actors"

func idKey(id string) string                { return "supplychain actor id " + id }
func nameKey(name string) string            { return "supplychain actor name " + name }
func actorEmissionsKey(actor string) string { return "supplychain emissions of actor " + actor }
func periodKey(period string) string        { return "supplychain emissions of period " + period }

// lock takes the keys with take (sqlstore.Lock or sqlstore.LockShared),
// in order and in one statement, when ctx belongs to a unit; outside one
// it does nothing.
func lock(ctx context.Context, take func(context.Context, ...string) error, keys ...string) error {
	if _, ok := sqlstore.Tx(ctx); !ok {
		return nil
	}
	return take(ctx, keys...)
}

// lockActor locks, exclusively, what creating or deleting the actor of
// id and names changes: the set of actors, the id, each name (sorted, so
// that two units take them in one order).
func lockActor(ctx context.Context, id string, names map[string]string) error {
	keys := []string{actorsKey, idKey(id)}
	var sorted []string
	for _, n := range names {
		sorted = append(sorted, nameKey(n))
	}
	sort.Strings(sorted)
	return lock(ctx, sqlstore.Lock, append(keys, sorted...)...)
}

// LockActor returns the actor of key, and, inside a unit, holds it for a
// delete: its id and names locked as lockActor does, then its row read
// FOR UPDATE (the advisory locks first, in the order a ref's resolution
// takes them, so that the two do not deadlock). ok is false when there
// is no such actor.
func (m *Model) LockActor(ctx context.Context, key string) (Actor, bool, error) {
	list, err := m.actors(ctx, "SELECT actor_key, id, type, display_name FROM sc_actors WHERE actor_key = ?", key)
	if err != nil || len(list) == 0 {
		return Actor{}, false, err
	}
	if err := lockActor(ctx, list[0].ID, list[0].DisplayName); err != nil {
		return Actor{}, false, err
	}
	list, err = m.actors(ctx, "SELECT actor_key, id, type, display_name FROM sc_actors WHERE actor_key = ?"+sqlstore.ForUpdate(ctx), key)
	if err != nil || len(list) == 0 {
		return Actor{}, false, err
	}
	return list[0], true, nil
}
