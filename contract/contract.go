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
	Arguments any   `json:"arguments"`
	Budget    Usage `json:"budget"`
	// AgentBudget is the usage of the agent, across its sessions, in the
	// period of its budget; nil when no agent budget applies.
	AgentBudget *Usage `json:"agent_budget,omitempty"`
	Session     string `json:"session"`
	Agent       string `json:"agent"`
	// Project is the absolute path of the project the agent works in
	// (where its .lean-ctx is), "" when there is none: for custom
	// policies that judge paths.
	Project string `json:"project"`
	// Resolved are the path arguments of a call of a tool that edits
	// files as the file system resolves them when the call is decided:
	// each path argument (as written) whose resolution differs from it,
	// with the absolute paths it resolves to (its symbolic links followed,
	// a relative path from the call's working directory and the
	// project's), or nil when it could not be resolved within the
	// harness's bounds (see govern.Resolve). Absent for other calls. The
	// self-protection rules refuse an edit of a path that resolves to one
	// of the harness's files, or that could not be resolved.
	Resolved map[string][]string `json:"resolved,omitempty"`
}

// Outcomes of a decision, from least to most restrictive: deny > ask >
// warn > allow. An ask is not allowed until a person approves the call
// (section 8).
const (
	Allow = "allow"
	Warn  = "warn"
	Ask   = "ask"
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
	// The agent's budget across its sessions (section 8).
	CodeAgentBudgetExhausted = "agent_budget_exhausted"
	CodeAgentShellBudget     = "agent_shell_budget"
	CodeAgentBudgetWarning   = "agent_budget_warning"
	// Self-protection: the harness's own files and the operator's
	// commands are out of an agent's reach.
	CodeHarnessFiles    = "harness_files"
	CodeOperatorCommand = "operator_command"
	// A call a role's [tools] ask matches, which would be allowed, waits
	// for a person's approval (section 8).
	CodeApprovalRequired = "approval_required"
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

// AgentBudget is what a decision or a status says of the budget of the
// agent across its sessions (contract section 8): the dimensions it bounds
// (the others are nil), its period ("day", "week", "month", "total") and
// its signal.
type AgentBudget struct {
	Agent  string     `json:"agent"`
	Period string     `json:"period"`
	Signal string     `json:"signal"`
	Tokens *Dimension `json:"tokens,omitempty"`
	Shell  *Dimension `json:"shell,omitempty"`
	Cost   *Dimension `json:"cost,omitempty"`
}

// Tool is a tool as a listing names it: its name, and for an upstream's
// tool the upstream and that upstream's own name for it.
type Tool struct {
	Name         string `json:"name"`
	Upstream     string `json:"upstream,omitempty"`
	UpstreamTool string `json:"upstream_tool,omitempty"`
}

// Named are tools of the harness's own, by name (no upstream).
func Named(names ...string) []Tool {
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = Tool{Name: n}
	}
	return out
}

// Decision is data.harness.decision (section 3 of the contract).
type Decision struct {
	Decision    string `json:"decision"`
	Allowed     bool   `json:"allowed"`
	Role        string `json:"role"`
	Tool        string `json:"tool"`
	ShellPolicy string `json:"shell_policy"`
	// ShellTool says the policy counts the call against the shell budget
	// (by the tool's name or its upstream's own name for it).
	ShellTool      bool     `json:"shell_tool"`
	CompressOutput bool     `json:"compress_output"`
	Reasons        []Reason `json:"reasons"`
	Warnings       []Reason `json:"warnings"`
	Signal         string   `json:"signal"`
	Budget         Budget   `json:"budget"`
	// AgentBudget is the agent's budget across its sessions, nil when
	// none applies.
	AgentBudget *AgentBudget `json:"agent_budget"`
}

// Status is a session's budget under its role, without a call: what the
// status line shows.
type Status struct {
	Role        string       `json:"role"`
	Signal      string       `json:"signal"`
	Budget      Budget       `json:"budget"`
	AgentBudget *AgentBudget `json:"agent_budget"`
}

// Status is the budget the decision was made on.
func (d Decision) Status() Status {
	return Status{Role: d.Role, Signal: d.Signal, Budget: d.Budget, AgentBudget: d.AgentBudget}
}

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

// ResetInput is the operator's reset of usage, as the decision log records
// it (path "harness/reset"): of a session's (scope "session"), or of an
// agent's across its sessions in the current period of its budget (scope
// "agent", no session).
type ResetInput struct {
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Scope   string `json:"scope"`
	Period  string `json:"period,omitempty"`
	By      string `json:"by"`
}

// ResetResult is what came of a reset: its usage is zero; a session keeps
// its role.
type ResetResult struct {
	Reset bool   `json:"reset"`
	Role  string `json:"role,omitempty"`
}

// The contract's defaults (section 4), which harness.toml may change.
var (
	// DefaultShellTools are counted against the shell budget and governed
	// by shell_policy.
	DefaultShellTools = []string{"ctx_shell", "ctx_execute"}
	// DefaultExemptTools skip the tool lists and budgets, so that an agent
	// can always see its role and budget.
	DefaultExemptTools = []string{SessionTool}
	// DefaultEditTools are the patterns (matched without regard to case)
	// of the tools taken to change files, which the self-protection rules
	// watch: the harness's ctx_edit (Claude Code's Edit, Write, MultiEdit
	// and NotebookEdit map to it) and the names MCP servers commonly give
	// such tools.
	DefaultEditTools = []string{
		"ctx_edit", "*write*", "*edit*", "*move*", "*rename*", "*delete*", "*remove*",
		"*create*", "*mkdir*", "*patch*", "*replace*", "*insert*", "*append*", "*copy*",
	}
)

// OperatorVerbs are the harness's commands that are the operator's alone
// (harness role set, harness budget reset, harness hook install): the
// self-protection rules refuse shell commands that run them, and the
// permission rules the hook installs refuse them to Claude Code's Bash.
var OperatorVerbs = []string{"role set", "budget reset", "hook install"}

// SessionTool is the agent's window on its role and budget (ctx_session),
// exempt by default.
const SessionTool = "ctx_session"
