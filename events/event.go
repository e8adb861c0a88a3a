package events

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agentharness/harness/contract"
)

// Type is the kind of an event.
type Type string

// The harness events of the contract.
const (
	BudgetWarning   Type = "BudgetWarning"
	BudgetExhausted Type = "BudgetExhausted"
	PolicyViolation Type = "PolicyViolation"
	RoleChanged     Type = "RoleChanged"
	// BudgetReset is the operator's reset of a session's usage, or of an
	// agent's across its sessions.
	BudgetReset Type = "BudgetReset"
	// ApprovalRequested is a call decided "ask": it waits for a person's
	// approval (contract section 8). Its fields are a PolicyViolation's.
	ApprovalRequested Type = "ApprovalRequested"
)

// Types are all event types, for validation and help.
var Types = []Type{BudgetWarning, BudgetExhausted, PolicyViolation, RoleChanged, BudgetReset, ApprovalRequested}

// Event is one harness event. The fields of its type are flat in the JSON
// object, as in the contract: BudgetWarning{role, dimension, used, limit,
// percent}, BudgetExhausted{role, dimension, used, limit},
// PolicyViolation{role, tool, reason}, RoleChanged{from, to},
// BudgetReset{by, scope, period}.
type Event struct {
	ID      string    `json:"id"`
	Type    Type      `json:"type"`
	Time    time.Time `json:"time"` // UTC, RFC 3339 with nanoseconds
	Session string    `json:"session"`
	Agent   string    `json:"agent"`
	Role    string    `json:"role,omitempty"`
	// Shadow is true when the enforcement mode is shadow: a violation was
	// recorded, not enforced.
	Shadow bool `json:"shadow,omitempty"`
	*Budget
	*Violation
	*Switch
	// Reset are the fields of BudgetReset (see MarshalJSON).
	Reset *Reset `json:"-"`
}

// Budget are the fields of BudgetWarning and BudgetExhausted. An agent's
// budget across its sessions (contract section 8) has scope "agent" and
// its period ("day:2026-12-01", "total"); a session's has neither.
type Budget struct {
	Dimension string `json:"dimension"`
	Used      int64  `json:"used"`
	Limit     int64  `json:"limit"`
	Percent   *int64 `json:"percent,omitempty"` // BudgetWarning only
	Scope     string `json:"scope,omitempty"`
	Period    string `json:"period,omitempty"`
}

// ScopeAgent is the scope of a budget event of an agent's budget.
const ScopeAgent = "agent"

// ScopeSession is the scope of a reset of a session's usage.
const ScopeSession = "session"

// Violation are the fields of PolicyViolation and ApprovalRequested.
type Violation struct {
	Tool string `json:"tool"`
	// Reason is the reasons' codes and messages in one line.
	Reason  string            `json:"reason"`
	Reasons []contract.Reason `json:"reasons"`
	// DecisionID links to the decision-log entry.
	DecisionID string `json:"decision_id,omitempty"`
}

// Switch are the fields of RoleChanged.
type Switch struct {
	From string `json:"from"`
	To   string `json:"to"`
	// By is who switched: "agent" or "operator".
	By string `json:"by,omitempty"`
}

// Reset are the fields of BudgetReset: who reset (by, "operator"), what
// (scope: ScopeSession, or ScopeAgent for an agent's budget across its
// sessions, with the period reset), and the decision-log entry of the
// reset.
type Reset struct {
	By         string `json:"by"`
	Scope      string `json:"scope"`
	Period     string `json:"period,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
}

// MarshalJSON writes the event as one flat object. A reset's by, scope,
// period and decision_id have the names of a switch's by, a budget event's
// scope and period and a violation's decision_id, which a flat object
// holds once: they are written from Reset.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event // the fields, without these methods
	if e.Reset == nil {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		plain
		*Reset // shallower than Budget's and Switch's fields: these win
	}{plain(e), e.Reset})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	if e.Type != BudgetReset {
		return nil
	}
	var r Reset
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	e.Reset, e.Budget, e.Violation, e.Switch = &r, nil, nil, nil // their keys were the reset's
	return nil
}

// NewID returns a UUID version 7: time-ordered, random below the
// millisecond.
func NewID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	b[6] = b[6]&0x0f | 0x70 // version 7
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Stamp fills an event's id and time (UTC).
func (e *Event) Stamp(now time.Time) {
	e.ID = NewID(now)
	e.Time = now.UTC()
}
