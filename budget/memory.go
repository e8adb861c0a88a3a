package budget

import (
	"context"
	"sync"
	"time"
)

// Memory is a Store in this process's memory.
type Memory struct {
	mu       sync.Mutex
	sessions map[Key]*Session
	now      func() time.Time
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{sessions: map[Key]*Session{}, now: time.Now} }

// update runs f on the session's counters under the lock and returns a copy;
// a session is created by its first change.
func (m *Memory) update(k Key, f func(c *Counters) bool) (Counters, bool, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[k]
	if !ok {
		s = &Session{Key: k}
	}
	before := s.Counters
	done := f(&s.Counters)
	if s.Counters != before || !ok && done {
		s.Updated = m.now().Truncate(time.Second)
		m.sessions[k] = s
	}
	return s.Counters, done, nil
}

func (m *Memory) Get(_ context.Context, k Key) (Counters, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[k]; ok {
		return s.Counters, nil
	}
	return Counters{}, nil
}

func (m *Memory) InitRole(_ context.Context, k Key, role string) (Counters, error) {
	c, _, err := m.update(k, func(c *Counters) bool {
		if c.Role == "" {
			c.Role = role
		}
		return true
	})
	return c, err
}

func (m *Memory) SetRole(_ context.Context, k Key, role string) (Counters, error) {
	c, _, err := m.update(k, func(c *Counters) bool { c.Role = role; return true })
	return c, err
}

func (m *Memory) SwitchRole(_ context.Context, k Key, from, to string) (Counters, bool, error) {
	return m.update(k, func(c *Counters) bool {
		if c.Role != from {
			return false
		}
		c.Role = to
		return true
	})
}

func (m *Memory) ReserveShell(_ context.Context, k Key, expected Counters) (Counters, bool, error) {
	return m.update(k, func(c *Counters) bool {
		if c.Shell != expected.Shell || c.Role != expected.Role {
			return false
		}
		c.Shell++
		return true
	})
}

func (m *Memory) AddShell(_ context.Context, k Key) (Counters, error) {
	c, _, err := m.update(k, func(c *Counters) bool { c.Shell++; return true })
	return c, err
}

func (m *Memory) Charge(_ context.Context, k Key, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	c, _, err := m.update(k, func(c *Counters) bool { c.Tokens += tokens; c.CostMicros += cost; return true })
	return c, err
}

func (m *Memory) Reset(_ context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[k]
	if !ok {
		return ErrNoSession
	}
	s.Counters = Counters{Role: s.Role}
	s.Updated = m.now().Truncate(time.Second)
	return nil
}

func (m *Memory) Sessions(_ context.Context, session string) ([]Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Session
	for k, s := range m.sessions {
		if session == "" || k.Session == session {
			out = append(out, *s)
		}
	}
	sortSessions(out)
	return out, nil
}

func (m *Memory) Close() error { return nil }
