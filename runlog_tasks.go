package actions

import "context"

// CreateTask keeps t in memory; see [TaskStore].
func (l *RunLog) CreateTask(_ context.Context, t Task) (Task, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tasks == nil {
		l.tasks = map[string]Task{}
	}
	if t.Key != "" {
		for _, o := range l.tasks {
			if o.Principal == t.Principal && o.Action == t.Action && o.Key == t.Key && !o.Expired(t.Created) {
				return o.clone(), false, nil
			}
		}
	}
	l.tasks[t.ID] = t.clone()
	return t, true, nil
}

// TaskByID returns the task id, or [ErrTaskNotFound]; see [TaskStore].
func (l *RunLog) TaskByID(_ context.Context, id string) (Task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tasks[id]
	if !ok {
		return Task{}, ErrTaskNotFound
	}
	return t.clone(), nil
}

// EndTask ends the task id unless it is terminal; see [TaskStore]. The
// log has no transactions: the status is set at once, whether or not
// the unit then keeps its records.
func (l *RunLog) EndTask(_ context.Context, id string, end Task) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tasks[id]
	if !ok || t.Status.Terminal() {
		return false, nil
	}
	t.Status, t.Message, t.Updated, t.Answer = end.Status, end.Message, end.Updated, end.clone().Answer
	l.tasks[id] = t
	return true, nil
}

// DeleteTask forgets the task id; see [TaskStore].
func (l *RunLog) DeleteTask(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tasks, id)
	return nil
}

// clone copies t with its answer.
func (t Task) clone() Task {
	if t.Answer != nil {
		a := *t.Answer
		if a.Refusal != nil {
			rf := *a.Refusal
			a.Refusal = &rf
		}
		a.Steps = append([]AnswerStep(nil), a.Steps...)
		t.Answer = &a
	}
	return t
}
