// Tasks: a call whose answer is deferred (the MCP Tasks extension,
// io.modelcontextprotocol/tasks), kept in the registry's Store.

package actions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// TaskOptions are the options of one [Registry.Start].
type TaskOptions struct {
	// TTL is how long the task is kept after its creation once it ended
	// (0: one hour; negative: until deleted).
	TTL time.Duration
	// MaxRunning bounds the tasks of one principal running at once in
	// this process (0: 16; negative: no bound). A task is a call that
	// outlives its request: without a bound a client could start them
	// without end.
	MaxRunning int
}

// defaultMaxRunning is the bound of TaskOptions.MaxRunning when zero.
const defaultMaxRunning = 16

// defaultTaskTTL is the TTL of a task whose options give none.
const defaultTaskTTL = time.Hour

// taskRuns are the tasks running in this process: their cancel
// functions and their last progress message.
type taskRuns struct {
	mu   sync.Mutex
	runs map[string]*taskRun
}

type taskRun struct {
	principal string
	cancel    context.CancelCauseFunc
	cancelled bool
	message   string
}

// errTaskCancelled is the cause of a task's context cancelled by
// Registry.CancelTask.
var errTaskCancelled = errors.New("actions: the task was cancelled")

// taskKey is the context key of the task a unit runs for.
type taskKey struct{}

// newTaskID returns 256 bits from crypto/rand as base64url.
func newTaskID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tasksOf returns the registry's task store, or an internal refusal.
func tasksOf(s store.Store) (store.TaskStore, error) {
	ts, ok := s.(store.TaskStore)
	if !ok || s == nil {
		rf := internalRefusal("the host keeps no tasks", errNoTaskStore)
		rf.Retry = codes.RetryNever
		return nil, rf
	}
	return ts, nil
}

var errAnonymousTask = errors.New("actions: Registry.Start was given a caller with no principal (run the call with Registry.Run, or give the caller a principal)")

var errNoTaskStore = errors.New("actions: Options.Store does not keep tasks (give the registry a RunLog or a sqlstore.Store)")

// endOf is the terminal state a call's answer gives its task: completed
// for a value or a refusal the caller acts on (tool-result), cancelled
// for a call the task's cancellation ended, failed for a refusal whose
// transport is protocol.
func endOf(v any, recs []store.Record, err error, cancelled bool, now time.Time) store.Task {
	end := store.Task{Updated: now, Status: store.TaskCompleted}
	if err != nil && cancelled && isCancel(err) {
		end.Status, end.Message = store.TaskCancelled, "the task was cancelled"
		return end
	}
	if err != nil && asRefusal(err) == nil {
		// A body's plain error: its text stays with the host.
		rf := NewRefusal(CodeOf(err), "the action failed; the server logged the cause")
		rf.Transport = codes.TransportToolResult
		err = rf
	}
	if rf := asRefusal(err); rf != nil {
		cp := *rf
		cp.cause = nil
		end.Answer = answerText(answer{Refusal: &cp})
		if cp.Policy().Transport == codes.TransportProtocol {
			end.Status, end.Message = store.TaskFailed, "the call failed"
		}
		return end
	}
	end.Answer = answerText(answerOf(nil, v, recs, nil))
	return end
}

// Start runs c, a call of one action, as a task: it keeps a new task
// (working, owned by c.Caller's principal) in the registry's Store,
// durably, then runs c as [Registry.Run] does in the background and
// returns the task at once. The call's unit ends the task in its own
// transaction (sqlstore.Store): the task is completed with the unit's
// changes and records, or the unit is undone when the task was ended
// meanwhile (a cancellation from another process). Its ctx is ctx's
// values without its cancellation: only [Registry.CancelTask] and the
// action's timeout end it. c.Progress is replaced: each report's message
// becomes the task's Message.
//
// With c.IdempotencyKey, a retry under the same key while the first
// task is kept gets that task, and nothing runs again (a retry with
// other parameters is refused idempotency_conflict).
//
// The gate decides the call before any task is kept, as Run's would
// (surface, capability, scope, serving, the principal's rate, counted
// once): a refused call keeps no task, and is recorded refused as Run
// records it.
//
// Errors (nothing is kept): internal when c.Caller is not nil and has no
// principal (an anonymous caller owns no task); unknown_action; the
// gate's refusals (forbidden_surface,
// forbidden_capability, insufficient_scope, not_serving, read_only,
// rate_limited...); invalid_parameters for a batch call or a malformed
// key; idempotency_conflict; rate_limited when o.MaxRunning tasks of the
// principal run in this process; internal when the Store keeps no tasks
// ([store.TaskStore]) or fails, or ctx is nil.
func (r *Registry) Start(ctx context.Context, c Call, o TaskOptions) (store.Task, error) {
	if ctx == nil {
		return store.Task{}, nilContext()
	}
	if c.Batch != nil {
		return store.Task{}, NewRefusal(codes.InvalidParameters, "a batch cannot run as a task")
	}
	if c.Caller != nil && c.Caller.Principal == "" {
		// Its empty principal is the host's: nobody but the host could
		// read the task, and the caller would share it with the host.
		rf := internalRefusal("a caller without identity cannot own a task", errAnonymousTask)
		rf.Retry = codes.RetryNever
		return store.Task{}, rf
	}
	ts, err := tasksOf(r.opts.Store)
	if err != nil {
		return store.Task{}, err
	}
	now := r.gateOf().now()
	t := store.Task{ID: newTaskID(), Action: c.Action, Status: store.TaskWorking, Created: now, Updated: now, TTL: o.TTL}
	switch {
	case t.TTL == 0:
		t.TTL = defaultTaskTTL
	case t.TTL < 0:
		t.TTL = 0
	}
	if c.Caller != nil {
		t.Principal = c.Caller.Principal
	}
	reg, ok := r.lookup(c.Action)
	if !ok {
		// No such action: refused and recorded as Run refuses it, with
		// no task kept under a name nothing serves.
		_, err := r.Run(ctx, c)
		return store.Task{}, err
	}
	t.Action = reg.action.ID
	// The gate decides before a task is kept (its rate counted once,
	// here): a caller it refuses keeps no task, and its call is recorded
	// refused as Run records it.
	gated := &gateDecision{err: r.gateOf().check(ctx, &reg.action.Definition, c.Caller)}
	if gated.err != nil {
		_, err := r.run(ctx, c, gated)
		return store.Task{}, err
	}
	if c.IdempotencyKey != "" {
		if err := checkKey(c.IdempotencyKey); err != nil {
			return store.Task{}, err
		}
		t.Key, t.Digest = c.IdempotencyKey, digestOf(r.givenParameters(c.Params))
	}
	run, err := r.reserveTask(t, o.MaxRunning)
	if err != nil {
		return store.Task{}, err
	}
	kept, created, err := ts.CreateTask(ctx, t)
	if err != nil || !created {
		r.dropTask(t.ID)
	}
	if err != nil {
		return store.Task{}, storeFailure(err)
	}
	if !created {
		if kept.Digest != t.Digest {
			return store.Task{}, keyConflict()
		}
		return r.withProgress(kept), nil
	}
	r.runTask(ctx, ts, t, c, run, gated)
	return t, nil
}

// reserveTask counts t among the running tasks of its principal, or
// refuses it rate_limited when max of them run (see
// TaskOptions.MaxRunning).
func (r *Registry) reserveTask(t store.Task, max int) (*taskRun, error) {
	if max == 0 {
		max = defaultMaxRunning
	}
	r.tasks.mu.Lock()
	defer r.tasks.mu.Unlock()
	if r.tasks.runs == nil {
		r.tasks.runs = map[string]*taskRun{}
	}
	if max > 0 {
		n := 0
		for _, run := range r.tasks.runs {
			if run.principal == t.Principal {
				n++
			}
		}
		if n >= max {
			rf := NewRefusal(codes.RateLimited, "too many tasks of this caller are running: retry when one has ended")
			rf.Retry = codes.RetryAfterBackoff
			return nil, rf
		}
	}
	run := &taskRun{principal: t.Principal}
	r.tasks.runs[t.ID] = run
	return run, nil
}

// dropTask forgets the running task id.
func (r *Registry) dropTask(id string) {
	r.tasks.mu.Lock()
	delete(r.tasks.runs, id)
	r.tasks.mu.Unlock()
}

// runTask runs c for the task t in the background.
func (r *Registry) runTask(ctx context.Context, ts store.TaskStore, t store.Task, c Call, run *taskRun, gated *gateDecision) {
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.tasks.mu.Lock()
	run.cancel = cancel
	if run.cancelled {
		// Cancelled once kept, before this: CancelTask found no cancel
		// function to call and ended the task in the store only.
		cancel(errTaskCancelled)
	}
	r.tasks.mu.Unlock()
	c.Progress = func(p Progress) {
		r.tasks.mu.Lock()
		run.message = p.Message
		r.tasks.mu.Unlock()
	}
	tctx = context.WithValue(tctx, taskKey{}, &taskUnit{id: t.ID, store: ts, cancelled: func() bool {
		r.tasks.mu.Lock()
		defer r.tasks.mu.Unlock()
		return run.cancelled
	}})
	go func() {
		defer func() {
			r.dropTask(t.ID)
			cancel(nil)
		}()
		res, err := r.run(tctx, c, gated)
		r.tasks.mu.Lock()
		cancelled := run.cancelled
		r.tasks.mu.Unlock()
		// A unit that committed ended the task in its transaction; any
		// other answer ends it here (a no-op when it is terminal).
		end := endOf(res.Value, res.Records, err, cancelled, r.gateOf().now())
		if err == nil && res.Text != "" {
			_, bounded := res.Value.(*bound.Bounded)
			end.Answer = answerText(answer{Value: res.Text, Bounded: bounded})
		}
		_, _ = ts.EndTask(context.WithoutCancel(ctx), t.ID, end)
	}()
}

// taskUnit is what a unit run for a task needs to end it.
type taskUnit struct {
	id        string
	store     store.TaskStore
	cancelled func() bool
}

// endInUnit ends the task of ctx, if any, inside the unit whose attempt
// gives u (v the value, err the unit's error): a unit that commits
// completes its task in its own transaction, at the time now reads (read
// only then), or, when the task was ended meanwhile, commits nothing and
// answers cancelled.
func endInUnit(ctx context.Context, now func() time.Time, v any, u *store.Unit) {
	tu, _ := ctx.Value(taskKey{}).(*taskUnit)
	if tu == nil || !u.Commit {
		return
	}
	end := endOf(v, u.Records, u.Err, tu.cancelled(), now())
	ok, err := tu.store.EndTask(ctx, tu.id, end)
	switch {
	case err != nil:
		u.Commit, u.Err = false, errors.Join(u.Err, err)
	case !ok:
		u.Commit = false
		if u.Err == nil {
			u.Err = cancelRefusal(context.Canceled)
		}
	}
}

// Task returns the task id as caller sees it: only its owner (the same
// principal; nil is the host, who sees every task; a caller without a
// principal finds none) finds it. A task that
// is terminal and past its TTL is deleted and not found. While the task
// runs in this process, its Message is the last progress report's.
//
// Errors: [store.ErrTaskNotFound] (unknown, expired, or another principal's:
// one answer); internal when the Store keeps no tasks or fails.
func (r *Registry) Task(ctx context.Context, id string, caller *identity.Caller) (store.Task, error) {
	ts, err := tasksOf(r.opts.Store)
	if err != nil {
		return store.Task{}, err
	}
	t, err := ts.TaskByID(ctx, id)
	if errors.Is(err, store.ErrTaskNotFound) {
		return store.Task{}, store.ErrTaskNotFound
	}
	if err != nil {
		return store.Task{}, storeFailure(err)
	}
	if caller != nil && (caller.Principal == "" || caller.Principal != t.Principal) {
		// An anonymous caller owns no task: "" is the host's principal.
		return store.Task{}, store.ErrTaskNotFound
	}
	if t.Expired(r.gateOf().now()) {
		_ = ts.DeleteTask(ctx, id)
		return store.Task{}, store.ErrTaskNotFound
	}
	return r.withProgress(t), nil
}

// withProgress sets t's message to its last progress report when it
// runs in this process.
func (r *Registry) withProgress(t store.Task) store.Task {
	if t.Status.Terminal() {
		return t
	}
	r.tasks.mu.Lock()
	defer r.tasks.mu.Unlock()
	if run := r.tasks.runs[t.ID]; run != nil && run.message != "" {
		t.Message = run.message
	}
	return t
}

// CancelTask asks the task id to stop, as caller (only its owner may):
// its body's ctx is cancelled when it runs in this process (cause: the
// task's cancellation), and the task ends cancelled with nothing kept,
// unless the call ended first: a terminal status stays as it is. When the
// task runs elsewhere (another replica), it is ended cancelled in the
// store, and that replica's unit, finding it ended, commits nothing.
// Cancelling is cooperative: a body that ignores ctx runs on.
//
// Errors: those of [Registry.Task].
func (r *Registry) CancelTask(ctx context.Context, id string, caller *identity.Caller) error {
	t, err := r.Task(ctx, id, caller)
	if err != nil || t.Status.Terminal() {
		return err
	}
	r.tasks.mu.Lock()
	run := r.tasks.runs[id]
	var stop context.CancelCauseFunc
	if run != nil {
		run.cancelled = true
		stop = run.cancel
	}
	r.tasks.mu.Unlock()
	if stop != nil {
		stop(errTaskCancelled)
		return nil // the run ends its task
	}
	ts, _ := tasksOf(r.opts.Store)
	if _, err := ts.EndTask(ctx, id, store.Task{Status: store.TaskCancelled, Message: "the task was cancelled", Updated: r.gateOf().now()}); err != nil {
		return storeFailure(err)
	}
	return nil
}

// TaskResult returns what the task t's call answered, as [Registry.Run] would
// have returned it: its value (Value, Text) or its refusal. A task that
// has not ended has no answer: the error is then a refusal with code
// in_progress.
func TaskResult(t store.Task) (Result, error) {
	if t.Answer == nil {
		return Result{}, inProgress(time.Time{})
	}
	return answeredFrom(t.Answer, nil)
}
