// Package contract holds the shapes every part of the harness agrees on
// (the harness contract, v1): the decision input and output, reasons and
// their codes, budget levels, the status line, role switches, and the
// contract's defaults. It is data only: no evaluation (the policy package
// decides), no storage, no I/O. Anything that reads or writes decisions
// (the event and decision logs, the gateway, the hook, reports) imports
// this package without linking the policy engine.
package contract

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
	Role string `json:"role"`
	// Tool is the tool's name as the agent called it (an upstream's tool
	// behind a gateway with prefixes: "lean__ctx_read").
	Tool string `json:"tool"`
	// Upstream is the MCP server the tool comes from, "" for the harness's
	// own tools and the CLI; UpstreamTool is that server's own name for it
	// ("ctx_read"). Claude Code's mcp__<server>__<tool> gives both.
	Upstream     string `json:"upstream"`
	UpstreamTool string `json:"upstream_tool"`
	// Arguments are the tool's arguments as the agent sent them: an object,
	// or nil for none. Anything else is malformed, and the policy refuses
	// it (invalid_input).
	Arguments any    `json:"arguments"`
	Budget    Usage  `json:"budget"`
	Session   string `json:"session"`
	Agent     string `json:"agent"`
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

// Budget levels of a dimension, and a decision's signal (the worst level).
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

// Status is a session's budget under its role, without a call: what the
// status line shows.
type Status struct {
	Role   string `json:"role"`
	Signal string `json:"signal"`
	Budget Budget `json:"budget"`
}

// Status is the budget the decision was made on.
func (d Decision) Status() Status { return Status{Role: d.Role, Signal: d.Signal, Budget: d.Budget} }

// StatusLine is the status line of the budget the decision was made on.
func (d Decision) StatusLine() string { return d.Status().StatusLine() }

// Who asks for a role switch.
const (
	ByAgent    = "agent"    // under the switch rules
	ByOperator = "operator" // may enter privileged roles
)

// CodeSwitchDenied is the code of a refused switch's reasons.
const CodeSwitchDenied = "switch_denied"

// SwitchInput is a request to change a session's active role.
type SwitchInput struct {
	From    string `json:"from"`
	To      string `json:"to"`
	By      string `json:"by"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	// MaxRole is the most privileged role the agent may hold ("" for no
	// such bound): an agent may switch only to the roles within it.
	MaxRole string `json:"max_role,omitempty"`
}

// SwitchDecision is data.harness.switch: whether the switch may happen and,
// if not, the rules that refused it (each reason names its rule).
type SwitchDecision struct {
	Allowed bool     `json:"allowed"`
	From    string   `json:"from"`
	To      string   `json:"to"`
	By      string   `json:"by"`
	Reasons []Reason `json:"reasons"`
}

// The contract's defaults (section 4), which harness.toml may change.
var (
	// DefaultShellTools are counted against the shell budget and governed
	// by shell_policy.
	DefaultShellTools = []string{"ctx_shell", "ctx_execute"}
	// DefaultExemptTools skip the tool lists and budgets, so that an agent
	// can always see its role and budget.
	DefaultExemptTools = []string{SessionTool}
)

// SessionTool is the agent's window on its role and budget (ctx_session),
// exempt by default.
const SessionTool = "ctx_session"
