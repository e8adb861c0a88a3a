package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"

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

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identity is the caller of a request, as the transport named it.
func identity(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// clientOf is what the request's client says of itself, "name/version" (""
// when it said nothing): a label of the decision-log entry.
func clientOf(ctx context.Context) string {
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return ""
	}
	info := s.GetClientInfo()
	switch {
	case info.Name == "":
		return ""
	case info.Version == "":
		return info.Name
	}
	return info.Name + "/" + info.Version
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
}

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

// HTTPOptions configure HTTPHandler.
type HTTPOptions struct {
	// Tokens admit agents. With none, every request is the agent
	// "anonymous" (only allowed on loopback: the caller checks).
	Tokens []Token
	// Anonymous allows requests without tokens when Tokens is empty.
	Anonymous bool
	// StartRole is the role of an anonymous agent's new sessions.
	StartRole string
}

// HTTPHandler serves streamable HTTP on /mcp. Agents present a bearer token
// (Authorization: Bearer T) naming them. Sessions are the gateway's: the
// MCP session it issues at initialize (Mcp-Session-Id, which it checks on
// every later request: an id it did not issue is refused), for clients of
// the protocol versions that have one; else one session per agent. A
// client may name its own session (X-Harness-Session) only when its
// token's configuration allows it: otherwise a new name per request would
// be a fresh budget each time.
func (g *Gateway) HTTPHandler(o HTTPOptions) http.Handler {
	mcpHandler := server.NewStreamableHTTPServer(g.srv,
		server.WithEndpointPath("/mcp"),
		server.WithStateful(true),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			id, _ := r.Context().Value(identityKey{}).(Identity)
			stream, _ := r.Context().Value(streamKey{}).(*errorStream)
			if id.Session == "" {
				// The MCP session the server issued and has checked
				// (never the header as the client sent it: a client of
				// the modern protocol, which has no sessions, may send
				// any); else one session per agent.
				id.Session = "http"
				if s := server.ClientSessionFromContext(ctx); s != nil && s.SessionID() != "" {
					id.Session = "mcp-" + s.SessionID()
				}
			}
			return withStream(WithIdentity(ctx, id), stream)
		}),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id Identity
		clientSessions := false
		switch {
		case len(o.Tokens) > 0:
			presented, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			found := false
			for _, t := range o.Tokens {
				if ok && t.matches(strings.TrimSpace(presented)) {
					id, found, clientSessions = Identity{Agent: t.Agent, StartRole: t.Role}, true, t.ClientSessions
					break
				}
			}
			if !found {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agent-harness"`)
				http.Error(w, "a valid bearer token is required (see [[gateway.tokens]] in harness.toml)", http.StatusUnauthorized)
				return
			}
		case o.Anonymous:
			id = Identity{Agent: "anonymous", StartRole: o.StartRole}
		default:
			http.Error(w, "no tokens are configured", http.StatusUnauthorized)
			return
		}
		switch named := r.Header.Get("X-Harness-Session"); {
		case named != "" && !clientSessions:
			http.Error(w, "X-Harness-Session is not accepted for this token: the gateway issues sessions (Mcp-Session-Id); "+
				"client_sessions = true on the token in harness.toml lets its client name them", http.StatusBadRequest)
			return
		case named != "":
			id.Session = named
		}
		stream := &errorStream{} // this request's response
		mcpHandler.ServeHTTP(errorResponseWriter{w, stream}, r.WithContext(withStream(WithIdentity(r.Context(), id), stream)))
	})
}
