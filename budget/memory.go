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
	agents   map[agentPeriod]*Usage
	now      func() time.Time
}

// agentPeriod names an agent's counters of one period.
type agentPeriod struct{ agent, period string }

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{sessions: map[Key]*Session{}, agents: map[agentPeriod]*Usage{}, now: time.Now}
}

// update runs f on the session's counters (and, with a period, the agent's)
// under the lock and returns a copy; a session, or an agent's period, is
// created by its first change.
func (m *Memory) update(k Key, period Period, f func(c *Counters) bool) (Counters, bool, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[k]
	if !ok {
		s = &Session{Key: k}
	}
	c := s.Counters
	ap := agentPeriod{k.Agent, period}
	if a := m.agents[ap]; period != "" && a != nil {
		c.AgentUsage = *a
	}
	before := c
	done := f(&c)
	if c != before || !ok && done {
		now := m.now().Truncate(time.Second)
		agent := c.AgentUsage
		c.AgentUsage = Usage{}
		s.Counters, s.Updated = c, now
		m.sessions[k] = s
		if period != "" && agent != before.AgentUsage {
			m.agents[ap] = &agent
		}
		c.AgentUsage = agent
	}
	return c, done, nil
}

func (m *Memory) Get(_ context.Context, k Key, period Period) (Counters, error) {
	if err := validate(k, period); err != nil {
		return Counters{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var c Counters
	if s, ok := m.sessions[k]; ok {
		c = s.Counters
	}
	if a := m.agents[agentPeriod{k.Agent, period}]; period != "" && a != nil {
		c.AgentUsage = *a
	}
	return c, nil
}

func (m *Memory) InitRole(_ context.Context, k Key, role string) (Counters, error) {
	c, _, err := m.update(k, "", func(c *Counters) bool {
		if c.Role == "" {
			c.Role = role
		}
		return true
	})
	return c, err
}

func (m *Memory) SetRole(_ context.Context, k Key, role string) (Counters, error) {
	c, _, err := m.update(k, "", func(c *Counters) bool { c.Role = role; return true })
	return c, err
}

func (m *Memory) SwitchRole(_ context.Context, k Key, from, to string) (Counters, bool, error) {
	return m.update(k, "", func(c *Counters) bool {
		if c.Role != from {
			return false
		}
		c.Role = to
		return true
	})
}

func (m *Memory) PinProject(_ context.Context, k Key, project string) (Counters, error) {
	c, _, err := m.update(k, "", func(c *Counters) bool {
		if c.Project == "" {
			c.Project = project
		}
		return true
	})
	return c, err
}

func (m *Memory) ReserveShell(_ context.Context, k Key, period Period, expected Counters) (Counters, bool, error) {
	return m.update(k, period, func(c *Counters) bool {
		if c.Shell != expected.Shell || c.Role != expected.Role || period != "" && c.AgentUsage.Shell != expected.AgentUsage.Shell {
			return false
		}
		c.Shell++
		if period != "" {
			c.AgentUsage.Shell++
		}
		return true
	})
}

func (m *Memory) AddShell(_ context.Context, k Key, period Period) (Counters, error) {
	c, _, err := m.update(k, period, func(c *Counters) bool {
		c.Shell++
		if period != "" {
			c.AgentUsage.Shell++
		}
		return true
	})
	return c, err
}

func (m *Memory) Charge(_ context.Context, k Key, period Period, tokens, cost int64) (Counters, error) {
	if err := checkCharge(tokens, cost); err != nil {
		return Counters{}, err
	}
	c, ok, err := m.update(k, period, func(c *Counters) bool {
		if !fits(c.Tokens, tokens) || !fits(c.CostMicros, cost) ||
			period != "" && (!fits(c.AgentUsage.Tokens, tokens) || !fits(c.AgentUsage.CostMicros, cost)) {
			return false // past the largest int64: nothing changes
		}
		c.Tokens += tokens
		c.CostMicros += cost
		if period != "" {
			c.AgentUsage.Tokens += tokens
			c.AgentUsage.CostMicros += cost
		}
		return true
	})
	if err == nil && !ok {
		return Counters{}, errOverflow(tokens, cost)
	}
	return c, err
}

func (m *Memory) ChargeIf(_ context.Context, k Key, period Period, expected Counters, tokens, cost int64) (Counters, bool, error) {
	if err := checkChargeIf(expected, period, tokens, cost); err != nil {
		return Counters{}, false, err
	}
	return m.update(k, period, func(c *Counters) bool {
		if c.Tokens != expected.Tokens || c.CostMicros != expected.CostMicros || period != "" &&
			(c.AgentUsage.Tokens != expected.AgentUsage.Tokens || c.AgentUsage.CostMicros != expected.AgentUsage.CostMicros) {
			return false
		}
		c.Tokens += tokens
		c.CostMicros += cost
		if period != "" {
			c.AgentUsage.Tokens += tokens
			c.AgentUsage.CostMicros += cost
		}
		return true
	})
}

func (m *Memory) ReleaseShell(_ context.Context, k Key, period Period) (Counters, error) {
	m.mu.Lock()
	_, ok := m.sessions[k]
	m.mu.Unlock()
	if !ok {
		return Counters{}, ErrNoSession
	}
	c, _, err := m.update(k, period, func(c *Counters) bool {
		c.Shell = max(c.Shell-1, 0)
		if period != "" {
			c.AgentUsage.Shell = max(c.AgentUsage.Shell-1, 0)
		}
		return true
	})
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
	s.Counters = Counters{Role: s.Role, Project: s.Project}
	s.Updated = m.now().Truncate(time.Second)
	return nil
}

func (m *Memory) ResetAgent(_ context.Context, agent string, period Period) error {
	if err := validate(Key{Agent: agent, Session: "-"}, period); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.agents[agentPeriod{agent, period}]
	if !ok || period == "" {
		return ErrNoSession
	}
	*a = Usage{}
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
