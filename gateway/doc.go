// Package gateway is the MCP server mode: a governance gateway in front of
// other MCP servers (upstreams). It re-exposes their tools, with their
// schemas as they are, and governs every call through the same path as the
// CLI (govern): tools/list shows what the session's role may call, a call
// is decided on the session's live counters, a denied call is a tool error
// with the reasons, a warned one carries the warning, and what goes back to
// the agent is charged. It adds ctx_session, the agent's window on its role
// and budget.
//
// It is transport only: it decides nothing itself.
package gateway
