package actions

import (
	"context"
	"encoding/json"
	"github.com/actionreg/actions/store"
	"time"
)

// CreateTask keeps t in memory; see [store.TaskStore]. It deletes the tasks
// that expired, from time to time, as it keeps new ones.
func (l *RunLog) CreateTask(_ context.Context, t store.Task) (store.Task, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tasks == nil {
		l.tasks = map[string]store.Task{}
	}
	if t.Key != "" {
		for _, o := range l.tasks {
			if o.Principal == t.Principal && o.Action == t.Action && o.Key == t.Key && !o.Expired(t.Created) {
				return cloneTask(o), false, nil
			}
		}
	}
	l.sweepTasks(t.Created)
	l.tasks[t.ID] = cloneTask(t)
	return t, true, nil
}

// sweepTasks deletes the tasks expired at now once the log holds twice
// as many as the last sweep left (and at least 64): tasks nobody reads
// again are not kept without end, at a cost spread over the creations.
// Called with l.mu held.
func (l *RunLog) sweepTasks(now time.Time) {
	if len(l.tasks) < 64 || len(l.tasks) < 2*l.swept {
		return
	}
	for id, o := range l.tasks {
		if o.Expired(now) {
			delete(l.tasks, id)
		}
	}
	l.swept = len(l.tasks)
}

// TaskByID returns the task id, or [store.ErrTaskNotFound]; see
// [store.TaskStore].
func (l *RunLog) TaskByID(_ context.Context, id string) (store.Task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tasks[id]
	if !ok {
		return store.Task{}, store.ErrTaskNotFound
	}
	return cloneTask(t), nil
}

// EndTask ends the task id unless it is terminal; see [store.TaskStore]. The
// log has no transactions: the status is set at once, whether or not
// the unit then keeps its records.
func (l *RunLog) EndTask(_ context.Context, id string, end store.Task) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tasks[id]
	if !ok || t.Status.Terminal() {
		return false, nil
	}
	t.Status, t.Message, t.Updated, t.Answer = end.Status, end.Message, end.Updated, cloneTask(end).Answer
	l.tasks[id] = t
	return true, nil
}

// DeleteTask forgets the task id; see [store.TaskStore].
func (l *RunLog) DeleteTask(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tasks, id)
	return nil
}

// cloneTask copies t with its answer.
func cloneTask(t store.Task) store.Task {
	if t.Answer != nil {
		t.Answer = append(json.RawMessage(nil), t.Answer...)
	}
	return t
}
