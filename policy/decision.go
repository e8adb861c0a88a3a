package policy

import (
	"fmt"
	"strings"
)

// Usage is a session's consumption before a call. Money is in integer
// micro-dollars.
type Usage struct {
	Tokens     int64 `json:"tokens"`
	Shell      int64 `json:"shell"`
	CostMicros int64 `json:"cost_micros"`
}

// Input is one tool call to decide (section 2 of the contract). The engine
// fills in the role's shell_policy.
type Input struct {
	Role      string         `json:"role"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Budget    Usage          `json:"budget"`
	Session   string         `json:"session"`
	Agent     string         `json:"agent"`
	// Project is the absolute path of the project the agent works in
	// (where its .lean-ctx is), "" when there is none: for custom
	// policies that judge paths.
	Project string `json:"project"`
}

// Outcomes of a decision, from least to most restrictive.
const (
	Allow = "allow"
	Warn  = "warn"
	Deny  = "deny"
)

// Budget levels.
const (
	LevelOK        = "OK"
	LevelWarning   = "WARNING"
	LevelExhausted = "EXHAUSTED"
)

// Reason codes of the contract, plus those of a refusal that is not about
// the call itself.
const (
	CodeToolDenied      = "tool_denied"
	CodeToolNotAllowed  = "tool_not_allowed"
	CodeShellDenied     = "shell_denied"
	CodeShellBudget     = "shell_budget"
	CodeBudgetExhausted = "budget_exhausted"
	CodePolicy          = "policy"
	CodeBudgetWarning   = "budget_warning"
	CodeUnknownRole     = "unknown_role"
	CodeInvalidInput    = "invalid_input"
	CodeEvalError       = "evaluation_error"
)

// Reason explains a deny or a warning.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Policy names the custom policy (harness.custom.<name>) of a "policy"
	// reason.
	Policy string `json:"policy,omitempty"`
	// Rule names the rule that refused a role switch.
	Rule string `json:"rule,omitempty"`
}

// Dimension is one budget dimension of a decision.
type Dimension struct {
	Used    int64  `json:"used"`
	Limit   int64  `json:"limit"`
	Percent int64  `json:"percent"`
	Level   string `json:"level"`
}

// Budget is the three dimensions.
type Budget struct {
	Tokens Dimension `json:"tokens"`
	Shell  Dimension `json:"shell"`
	Cost   Dimension `json:"cost"`
}

// Decision is data.harness.decision (section 3 of the contract).
type Decision struct {
	Decision       string   `json:"decision"`
	Allowed        bool     `json:"allowed"`
	Role           string   `json:"role"`
	Tool           string   `json:"tool"`
	ShellPolicy    string   `json:"shell_policy"`
	CompressOutput bool     `json:"compress_output"`
	Reasons        []Reason `json:"reasons"`
	Warnings       []Reason `json:"warnings"`
	Signal         string   `json:"signal"`
	Budget         Budget   `json:"budget"`
}

// denied is the decision for a call the engine could not evaluate.
func denied(in Input, code, msg string) Decision {
	return Decision{
		Decision: Deny,
		Role:     in.Role,
		Tool:     in.Tool,
		Reasons:  []Reason{{Code: code, Message: msg}},
		Warnings: []Reason{},
		Signal:   LevelOK,
	}
}

// StatusLine is the budget summary of section 5 of the contract:
//
//	Budget[coder]: tokens 50000/200000 (25%) | shell 5/100 (5%) | cost $0.50/$5.00 (10%) → OK
func (d Decision) StatusLine() string {
	b := d.Budget
	return fmt.Sprintf("Budget[%s]: tokens %d/%d (%d%%) | shell %d/%d (%d%%) | cost %s/%s (%d%%) → %s",
		d.Role,
		b.Tokens.Used, b.Tokens.Limit, b.Tokens.Percent,
		b.Shell.Used, b.Shell.Limit, b.Shell.Percent,
		FormatUSD(b.Cost.Used), FormatUSD(b.Cost.Limit), b.Cost.Percent,
		d.Signal)
}

// FormatUSD prints micro-dollars as dollars with two decimals, rounded down
// (usage is never overstated): 4_999_999 → "$4.99".
func FormatUSD(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	return fmt.Sprintf("%s$%d.%02d", sign, micros/1_000_000, micros/10_000%100)
}

// ParseUSD reads a dollar amount ("0.5", "$5", "12.345678") exactly, as
// micro-dollars. More than six decimals, a sign, or anything but digits and
// one dot is an error.
func ParseUSD(s string) (int64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 12 {
		return 0, fmt.Errorf("invalid dollar amount %q: want digits with at most 6 decimals, like 0.50", s)
	}
	var n int64
	for _, c := range whole + frac + strings.Repeat("0", 6-len(frac)) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid dollar amount %q: want digits with at most 6 decimals, like 0.50", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}
