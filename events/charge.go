package events

// The paths of the decision log's entries: what each entry records.
const (
	// PathDecision is a tool call's decision (data.harness.decision): its
	// input and the decision. A call that took a shell slot has
	// custom.shell = 1 (Custom.Shell).
	PathDecision = "harness/decision"
	// PathSwitch is a role switch's decision (data.harness.switch).
	PathSwitch = "harness/switch"
	// PathCharge is a charge: what a call's result (or another message
	// that reached the agent, or a sampling request it answered) cost the
	// session, as the policy's allowance let it, or a shell slot given
	// back. Its input is a ChargeInput, its result a ChargeResult.
	PathCharge = "harness/charge"
)

// CustomShell is the key of Custom.Shell, which says how many shell slots
// a decision took (1) in the ledger: a shell call that was allowed and is
// going to run, as opposed to a decision only asked.
const CustomShell = "shell"

// ChargeInput is the input of a charge's entry: whose it is and for what.
// Its keys are those of a decision's input, so that the masks of [log]
// mask apply to it alike.
type ChargeInput struct {
	Role    string `json:"role"`
	Tool    string `json:"tool"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Project string `json:"project"`
}

// ChargeResult is the result of a charge's entry: what was added to the
// session's counters (and to its agent's period, if it has a budget), in
// one atomic change of the ledger, and the counters after it.
type ChargeResult struct {
	// DecisionID is the decision of the call charged, when known.
	DecisionID string `json:"decision_id,omitempty"`
	// Tokens are the context tokens charged; CostMicros the cost;
	// Shell the shell slots (-1: a slot given back for a call that was
	// never made).
	Tokens     int64 `json:"tokens"`
	CostMicros int64 `json:"cost_micros"`
	Shell      int64 `json:"shell,omitempty"`
	// InputTokens are the tokens of the call's arguments (priced, not
	// charged to the context).
	InputTokens int64 `json:"input_tokens,omitempty"`
	// Withheld are the tokens of the output that the budget did not
	// cover, cut or dropped before the output reached the agent.
	Withheld int64 `json:"withheld,omitempty"`
	// CostOnly is a charge of cost alone (a sampling request).
	CostOnly bool `json:"cost_only,omitempty"`
	// After are the session's counters after the charge.
	After ChargeCounters `json:"after"`
}

// ChargeCounters are a session's counters.
type ChargeCounters struct {
	Tokens     int64 `json:"tokens"`
	Shell      int64 `json:"shell"`
	CostMicros int64 `json:"cost_micros"`
}
