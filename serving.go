package actions

import (
	"sync"
	"sync/atomic"
)

// Serving is what a host switches while it serves, as slog.LevelVar is
// for a level: read-only, and which actions are not served. Give one to
// the gate ([GateOptions].Serving), keep it, and change it at any time;
// every call reads it as it is then. The zero value serves everything.
// It is safe for concurrent use.
type Serving struct {
	readOnly atomic.Bool
	stopAll  atomic.Bool
	stopped  sync.Map // id → struct{}
}

// SetReadOnly switches read-only on (true) or off: while on, every call
// of an action whose effect is not read is refused read_only (retry
// after backoff), the host's own calls (no caller) included.
func (s *Serving) SetReadOnly(on bool) { s.readOnly.Store(on) }

// Stop stops serving the actions ids: their calls are refused
// not_serving until Resume names them. An id not registered yet is
// kept, so that an action registered later starts stopped.
func (s *Serving) Stop(ids ...string) {
	for _, id := range ids {
		s.stopped.Store(id, struct{}{})
	}
}

// StopAll stops serving every action until ResumeAll.
func (s *Serving) StopAll() { s.stopAll.Store(true) }

// Resume serves the actions ids again (after Stop). It does not undo
// StopAll.
func (s *Serving) Resume(ids ...string) {
	for _, id := range ids {
		s.stopped.Delete(id)
	}
}

// ResumeAll serves every action again: it undoes StopAll and every Stop.
func (s *Serving) ResumeAll() {
	s.stopAll.Store(false)
	s.stopped.Clear()
}
