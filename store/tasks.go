package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// TaskStatus is where a task stands (MCP Tasks extension, "Task
// Status"): working, then one of the terminal statuses completed,
// cancelled or failed. The extension's input_required is never set: the
// registry asks nothing of a task's caller.
type TaskStatus string

// The statuses of a task.
const (
	TaskWorking TaskStatus = "working"
	// TaskCompleted: the call ended with an answer, a value or a refusal
	// whose transport is tool-result (an MCP result with isError).
	TaskCompleted TaskStatus = "completed"
	// TaskCancelled: the task was cancelled before the call ended;
	// nothing it changed was kept (on a store with transactions).
	TaskCancelled TaskStatus = "cancelled"
	// TaskFailed: the call ended with a refusal whose transport is
	// protocol (internal, output_invalid...): a JSON-RPC error in MCP.
	TaskFailed TaskStatus = "failed"
)

// Terminal reports whether s is completed, cancelled or failed: a
// terminal status is never changed again.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskCancelled || s == TaskFailed
}

// Task is a call whose answer is deferred, as a [TaskStore] keeps it.
// It holds no credential: the owner's principal only.
type Task struct {
	// ID is the task's id: 43 characters of base64url without padding,
	// 256 bits from crypto/rand, unguessable.
	ID string `json:"taskId"`
	// Principal is the owner: the principal of the call's caller ("" for
	// the host). Only the owner sees the task.
	Principal string `json:"principal"`
	// Action is the id of the action called.
	Action string `json:"action"`
	// Key is the call's idempotency key ("" for none), and Digest the
	// hex SHA-256 of its parameters' canonical JSON (with a key only): a
	// retry under the same key gets this task.
	Key    string `json:"key,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Status is where the task stands; Message says it for a person (the
	// last progress report's message while working).
	Status  TaskStatus `json:"status"`
	Message string     `json:"statusMessage,omitempty"`
	// Created and Updated are when the task was created and last changed.
	Created time.Time `json:"createdAt"`
	Updated time.Time `json:"lastUpdatedAt"`
	// TTL is how long the task is kept, counted from Created; 0 keeps it
	// until deleted. A task that is not terminal is kept whatever its TTL.
	TTL time.Duration `json:"ttl,omitempty"`
	// Answer is the call's answer once the task is completed or failed, as
	// canonical JSON that a TaskStore keeps as it is
	// ([github.com/actionreg/actions.TaskResult] reads it): a JSON object with
	// the value's canonical JSON text ("value") or the refusal ("refusal"; for
	// failed, always). Nil otherwise.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// Expired reports whether t, terminal, outlived its TTL at now. A task
// still running never expires.
func (t Task) Expired(now time.Time) bool {
	return t.Status.Terminal() && t.TTL > 0 && !now.Before(t.Created.Add(t.TTL))
}

// TaskStore keeps tasks. [github.com/actionreg/actions.RunLog] and
// sqlstore.Store implement it; a registry runs tasks only when its Store does.
// A TaskStore is safe for concurrent use.
type TaskStore interface {
	// CreateTask keeps t, durably: once it returns, TaskByID finds t
	// from any process sharing the store. When t.Key is set and a task
	// of the same principal, action and key is kept and not expired at
	// t.Created, it keeps nothing and returns that task with created
	// false (the caller compares digests).
	CreateTask(ctx context.Context, t Task) (kept Task, created bool, err error)
	// TaskByID returns the task id, or [ErrTaskNotFound].
	TaskByID(ctx context.Context, id string) (Task, error)
	// EndTask moves the task id to the terminal status of end (with its
	// Message, Answer and Updated) only if it is not terminal yet, and
	// reports whether it did: a terminal status is never overwritten.
	// Inside a unit of the store (ctx a unit's context) it writes in the
	// unit's transaction, so that the status commits with the unit.
	EndTask(ctx context.Context, id string, end Task) (bool, error)
	// DeleteTask forgets the task id (no error when it is unknown).
	DeleteTask(ctx context.Context, id string) error
}

// ErrTaskNotFound is the error of a task that does not exist, expired,
// or belongs to another principal: the three are one answer.
var ErrTaskNotFound = errors.New("actions: task not found")
