package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"github.com/agentharness/harness/budget"
)

// Identity is who calls: the agent, its session, and the role a new
// session of it starts in. The transport says who the agent is (the
// operator's --agent over stdio, the bearer token over HTTP), never the
// client: what a client says of itself (MCP clientInfo) is only recorded.
type Identity struct {
	Agent     string
	Session   string
	StartRole string
}

func (id Identity) key() budget.Key { return budget.Key{Agent: id.Agent, Session: id.Session} }

// Token maps a bearer token to an agent and the role its new sessions start
// in. Give the token itself, or its SHA-256 in hex (so that the
// configuration need not hold the secret).
type Token struct {
	Token  string
	SHA256 string
	Agent  string
	Role   string
	// ClientSessions lets the token's client name its sessions with the
	// X-Harness-Session header; without it the gateway issues them.
	ClientSessions bool
	// Operator lets the token see every agent's sessions in the live view
	// (package ui). A token without an agent is for that alone: the
	// gateway admits no MCP client with it.
	Operator bool
}

// Matches says, in constant time, whether presented is the token.
func (t Token) Matches(presented string) bool { return t.matches(presented) }

func (t Token) matches(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	want := t.SHA256
	if want == "" {
		s := sha256.Sum256([]byte(t.Token))
		want = hex.EncodeToString(s[:])
	}
	got := hex.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(strings.ToLower(want)), []byte(got)) == 1
}
