// Package report says where the budget went: it streams the decision log
// (decisions.jsonl and its rotated files, in OPA's decision-log shape) and
// the events log, over a time range, and adds up per agent, session, role,
// tool or day the calls (allowed, warned, denied, by reason), the tokens,
// shell calls and cost charged, and the sessions that hit a limit; beside
// them it puts the ledger's counters, which are authoritative, and says
// whether the log accounts for them. It renders a terminal table, JSON,
// CSV, and one self-contained HTML page with charts drawn as SVG on the
// server (see WriteHTML).
//
// What the log holds per call and per charge: a decision entry (path
// harness/decision) per call, with the session's usage before it, the
// decision and its reasons, and custom.shell = 1 when it took a shell slot;
// a charge entry (path harness/charge) per change of the counters after a
// call (the tokens and cost of what reached the agent, or a shell slot
// given back), with the counters after it. So the charges and shell slots
// of a session's entries add up to its counters in the ledger, as long as
// the log holds all of the session's life (rotation drops the oldest
// files) and its usage was never reset.
package report

import (
	"time"
)

// Groupings of a report's rows.
const (
	ByAgent   = "agent"
	BySession = "session"
	ByRole    = "role"
	ByTool    = "tool"
	ByDay     = "day"
)

// Groupings are the values of Options.By.
var Groupings = []string{ByAgent, BySession, ByRole, ByTool, ByDay}

// Counts are what a set of entries adds up to.
type Counts struct {
	// Calls are the decisions of tool calls: Allowed + Warned + Denied.
	Calls   int64 `json:"calls"`
	Allowed int64 `json:"allowed"`
	Warned  int64 `json:"warned"`
	Denied  int64 `json:"denied"`
	// Shadowed are the denied calls that ran anyway (shadow mode).
	Shadowed int64 `json:"shadowed,omitempty"`
	// DeniedBy counts the reasons of the denied calls by code (a call
	// with several reasons counts under each).
	DeniedBy map[string]int64 `json:"denied_by"`
	// Tokens, Shell and CostMicros are what was charged: context tokens,
	// shell slots taken (less those given back), cost in micro-dollars.
	Tokens     int64 `json:"tokens"`
	Shell      int64 `json:"shell"`
	CostMicros int64 `json:"cost_micros"`
	// Withheld are the tokens of outputs cut to fit the budget.
	Withheld int64 `json:"withheld"`
	// Charges are the charge entries.
	Charges int64 `json:"charges"`
}

// Group is one row of a report: its key (an agent, a session, a role, a
// tool or a UTC day) and what its entries add up to.
type Group struct {
	Key string `json:"key"`
	// Agent and Session name the session of a row by session.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	Counts
	// Sessions are the sessions with entries in the row; Limited, those of
	// them that hit a limit in the range.
	Sessions int `json:"sessions"`
	Limited  int `json:"sessions_limited"`
}

// Reason is a refusal's code and how often it refused a call.
type Reason struct {
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// Tool is what a tool's calls were charged.
type Tool struct {
	Tool       string `json:"tool"`
	Calls      int64  `json:"calls"`
	Tokens     int64  `json:"tokens"`
	CostMicros int64  `json:"cost_micros"`
}

// Point is what one agent was charged in one interval of the series.
type Point struct {
	Tokens     int64 `json:"tokens"`
	CostMicros int64 `json:"cost_micros"`
}

// Series is the charges over time per agent: Start[i] begins the i-th
// interval of Step; Agents[a][i] is agent a's in it.
type Series struct {
	Step   time.Duration      `json:"step_ns"`
	Start  []time.Time        `json:"start"`
	Agents map[string][]Point `json:"agents"`
}

// Limits are a session's role's limits: a limit of 0 is none; a dimension
// warns from Warn and is exhausted from Block percent of its limit (Block
// above 100: never).
type Limits struct {
	Tokens       int64 `json:"tokens"`
	Shell        int64 `json:"shell"`
	CostMicros   int64 `json:"cost_micros"`
	WarnPercent  int64 `json:"warn_percent"`
	BlockPercent int64 `json:"block_percent"`
}

// LedgerSession is what the ledger holds of a session: its counters now,
// its role and that role's limits (Defined false when the rules in force do
// not define the role).
type LedgerSession struct {
	Agent      string    `json:"agent"`
	Session    string    `json:"session"`
	Role       string    `json:"role"`
	Defined    bool      `json:"role_defined"`
	Tokens     int64     `json:"tokens"`
	Shell      int64     `json:"shell"`
	CostMicros int64     `json:"cost_micros"`
	Signal     string    `json:"signal"`
	Limits     Limits    `json:"limits"`
	Updated    time.Time `json:"updated"`
}

// Hit is a limit a session hit: the dimension ("tokens", "shell", "cost";
// "agent tokens" and so on for its agent's budget across sessions;
// "budget" for an output cut to fit whatever was left), how (an exhausted
// budget, refusals, outputs cut), and when first.
type Hit struct {
	Limit string    `json:"limit"`
	How   []string  `json:"how"`
	At    time.Time `json:"at"`
}

// Ways a session hits a limit.
const (
	HitExhausted = "exhausted" // a BudgetExhausted event
	HitRefused   = "refused"   // a call denied for the budget
	HitCut       = "cut"       // an output cut or dropped to fit
)

// Session is one session of the report: what its entries in the range add
// up to, and what the ledger holds of it.
type Session struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Role is its role at its last entry in the range (or the ledger's).
	Role string `json:"role"`
	Counts
	// First and Last are the times of its first and last entries in the
	// range.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Hits are the limits it hit in the range, the first time each.
	Hits []Hit `json:"hits"`
	// Ledger is what the ledger holds of it (nil: nothing).
	Ledger *LedgerSession `json:"ledger"`
	// Logged are what all its entries in the log add up to, whatever the
	// range: what the ledger should hold.
	Logged Usage `json:"logged"`
	// Accounted is true when Logged equals the ledger's counters (after
	// a reset, when the ledger holds no more than Logged).
	Accounted bool `json:"accounted"`
	// Reset is true when its usage was reset: the ledger started again
	// from zero, and holds none of what was logged before.
	Reset bool `json:"reset,omitempty"`
}

// Usage are tokens, shell calls and cost.
type Usage struct {
	Tokens     int64 `json:"tokens"`
	Shell      int64 `json:"shell"`
	CostMicros int64 `json:"cost_micros"`
}

// Report is where the budget went over a range.
type Report struct {
	// From and To bound the range ([From, To); zero: unbounded).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	By   string    `json:"by"`
	// First and Last are the times of the first and last entries in it.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Groups are the rows, Totals what they add up to.
	Groups []Group `json:"groups"`
	Totals Group   `json:"totals"`
	// Reasons are the refusals by reason, the most frequent first.
	Reasons []Reason `json:"reasons"`
	// Tools are the tools by tokens charged, the most first.
	Tools []Tool `json:"tools"`
	// Series are the charges over time per agent.
	Series Series `json:"series"`
	// Sessions are the sessions with entries in the range (and those
	// the ledger changed in it that the log lacks), by agent and id.
	Sessions []Session `json:"sessions"`
	// Ledger is what the ledger holds of those sessions, together.
	Ledger Usage `json:"ledger"`
	// Accounted is true when the log accounts for the ledger's counters
	// of every one of them.
	Accounted bool `json:"accounted"`
	// Entries are the log's lines read in the range, Skipped those that
	// could not be read (not JSON, or another shape).
	Entries int64 `json:"entries"`
	Skipped int64 `json:"skipped"`
}

// Limited are the sessions that hit a limit.
func (r *Report) Limited() []Session {
	var out []Session
	for _, s := range r.Sessions {
		if len(s.Hits) > 0 {
			out = append(out, s)
		}
	}
	return out
}
