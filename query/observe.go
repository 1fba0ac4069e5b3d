package query

import "time"

// Observer is told how long the engine took for each charged query: its
// statements and the noise, from after the charge until the answer (or
// the error). It lets a server time its engine without this package
// knowing how the times are kept. It must be safe for concurrent use.
type Observer interface {
	EngineDone(d time.Duration, err error)
}

// SetObserver sets the observer of engine times; nil means none.
func (s *Service) SetObserver(o Observer) {
	s.mu.Lock()
	s.obs = o
	s.mu.Unlock()
}

// engineDone tells the observer, if any, that the engine took d.
func (s *Service) engineDone(d time.Duration, err error) {
	s.mu.Lock()
	o := s.obs
	s.mu.Unlock()
	if o != nil {
		o.EngineDone(d, err)
	}
}
