package store

import (
	"context"
	"encoding/json"
	"time"
)

// KeyStore is a [Store] that keeps idempotency keys: the optional interface (as
// database/sql/driver adds optional interfaces to a driver) that the registry
// needs to run a call carrying a key
// ([github.com/actionreg/actions.Call].IdempotencyKey).
// [github.com/actionreg/actions.RunLog] implements it in one process's memory,
// sqlstore.Store in its database, for every replica sharing it.
//
// The registry runs the protocol itself (docs/database.md, "Idempotency
// keys"): it claims the key before the unit runs, waits for a claim
// still running, compares digests, answers a retry from the row and
// writes its audit line, and tells the store what the unit leaves under
// the key. A store keeps one row per (Principal, Action, Key) and
// writes it when told; it decides nothing. On a Store without this
// interface the registry refuses every keyed call (internal, retry
// never) rather than fall back to memory: at most once cannot be
// promised without a row every process sharing the store sees.
type KeyStore interface {
	Store
	// ClaimKey claims the key of claim for a unit about to run. When the
	// store keeps no row for (claim.Principal, claim.Action, claim.Key),
	// or one whose Expires is not after now, it keeps claim in its place
	// and returns nil; the claim must be durable when ClaimKey returns
	// (in a write of its own, seen by every process sharing the store),
	// so that no other process runs the unit while it may be running.
	// Otherwise it writes nothing and returns the row it keeps, with
	// Records set (none while the row's unit runs).
	ClaimKey(ctx context.Context, claim KeyRecord, now time.Time) (*KeyRecord, error)
	// SettleKey is called inside a unit (ctx is the context
	// [Store.Atomic] gave fn), at most once per attempt, to say what
	// the unit leaves under a key. When the unit commits, done is
	// written in place of the key's row, with the unit's changes and
	// records (in the same transaction). When it does not (it says so,
	// or its commit fails), undone is written instead, with the unit's
	// rolled-back records; an undone whose Answer is nil (no body of
	// the unit started) deletes the row if it is still the claim
	// undone.Unit names, unanswered or answered by the store itself
	// (as sqlstore's SettleOrphans answers a dead process's claims), and
	// one with neither Answer nor Unit leaves the row as it is. In a row
	// it writes, a store puts its own id of the unit in Unit, by which
	// ClaimKey finds the unit's records. Outside a unit it returns an
	// error.
	SettleKey(ctx context.Context, done, undone KeyRecord) error
}

// KeyRecord is the row a [KeyStore] keeps for one idempotency key.
type KeyRecord struct {
	// Principal, Action and Key name the row: the caller's principal
	// ("" for the host and anonymous callers, who share one scope), the
	// action's id ("#batch" for a batch), the caller's key (1 to 255
	// printable ASCII bytes).
	Principal, Action, Key string
	// Digest is the hex SHA-256 of the canonical JSON of the call's
	// parameters as given (of the batch, for a batch).
	Digest string
	// Expires is when the row stops answering retries, by the
	// registry's clock: a claim made at or after it replaces the row.
	Expires time.Time
	// Unit names the unit the row is for: in a claim (Answer nil), a
	// token the registry drew for it; in a row a unit settled, the
	// store's own id of that unit.
	Unit string
	// Answer is what the unit answers its retries with, canonical JSON
	// the store keeps as it is (the registry alone reads it); nil while
	// the unit runs.
	Answer json.RawMessage
	// Records, in a row ClaimKey returns, are the records of the unit
	// Unit names, as the store keeps them. A store ignores them in the
	// rows it is given.
	Records []Record
}
