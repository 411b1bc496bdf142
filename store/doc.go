// Package store is what the registry of package
// github.com/actionreg/actions keeps and the interfaces of whatever keeps
// it, as database/sql/driver is to database/sql: a host names it when it
// reads the run log or writes a store of its own, not to register or call
// actions.
//
// What is kept: each call's [Record] (its [RunEntry], the run_entry shape
// that replay compares, and its [Audit] line), idempotency keys
// ([KeyRecord]) and tasks ([Task]). Where it is kept: a [Store], whose one
// method runs a [Unit] (a call, a batch, a decision) so that the unit's
// work and its records are kept together or not at all; a Store may also
// be a [Savepointer], a [KeyStore] and a [TaskStore]. The registry runs
// the protocols (the key's wait, conflict and retry; a task's end) and the
// store keeps rows: package sqlstore is one on SQLite and PostgreSQL, the
// root's RunLog one in memory.
package store
