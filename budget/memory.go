package budget

import (
	"context"
	"sync"
)

// Memory is a Store in this process's memory.
type Memory struct {
	mu       sync.Mutex
	sessions map[Key]*Counters
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{sessions: map[Key]*Counters{}} }

// update runs f on the session's counters under the lock and returns a copy.
func (m *Memory) update(k Key, f func(c *Counters) bool) (Counters, bool, error) {
	if err := k.Validate(); err != nil {
		return Counters{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.sessions[k]
	if !ok {
		c = &Counters{}
		m.sessions[k] = c
	}
	done := f(c)
	return *c, done, nil
}

func (m *Memory) Get(_ context.Context, k Key) (Counters, error) {
	c, _, err := m.update(k, func(*Counters) bool { return true })
	return c, err
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
	_, _, err := m.update(k, func(c *Counters) bool { *c = Counters{Role: c.Role}; return true })
	return err
}

func (m *Memory) Close() error { return nil }
