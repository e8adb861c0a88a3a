// Package gateway is the MCP server mode: a governance gateway in front of
// other MCP servers (upstreams), speaking MCP on both sides, message for
// message: tools, resources, prompts, logging, completions, progress and
// cancellation pass through, and so do the requests an upstream makes of
// the agent (sampling, elicitation, roots) when the agent's client can
// answer them.
//
// Each agent session has connections of its own to the upstreams, which
// are told the agent's capabilities, so an upstream sees the client it
// would see without the gateway. What the gateway declares to the agent is
// what its upstreams declared, together.
//
// What it governs, it governs through the same path as the CLI (govern):
// listings show what the session's role may use, a call of a tool (or a
// read of a resource, a get of a prompt) is decided on the session's live
// counters, a refusal is a tool error with the reasons in its text and the
// decision in _meta, a warning rides on the result, and what goes back to
// the agent is charged before it is released, cut to what the budget
// leaves. It adds ctx_session, the agent's window on its role and budget,
// and sends the session's harness events as MCP log messages to a client
// that asked for them.
//
// It decides nothing itself: the policy does. Results it does not change
// pass through as the upstream wrote them.
package gateway
