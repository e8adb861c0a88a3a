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
// session of it starts in.
type Identity struct {
	Agent   string
	Session string
	// Derived, when Session is empty, names the session after the client:
	// "<client name>@<Derived>" (stdio: the working directory).
	Derived   string
	StartRole string
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identity is the caller of a request: the transport's identity, completed
// with the client's name where the session or agent is left to derive.
func identity(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	if id.Session == "" || id.Agent == "" {
		client := "mcp"
		if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
			if n := s.GetClientInfo().Name; n != "" {
				client = n
			}
		}
		if id.Agent == "" {
			id.Agent = client
		}
		if id.Session == "" {
			id.Session = client + "@" + id.Derived
		}
	}
	return id
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
// (Authorization: Bearer T) naming them. The session is the client's MCP
// session (Mcp-Session-Id, for clients of the protocol versions that have
// one), else the X-Harness-Session header, else one session per agent.
func (g *Gateway) HTTPHandler(o HTTPOptions) http.Handler {
	mcpHandler := server.NewStreamableHTTPServer(g.srv,
		server.WithEndpointPath("/mcp"),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			id, _ := r.Context().Value(identityKey{}).(Identity)
			stream, _ := r.Context().Value(streamKey{}).(*errorStream)
			return withStream(WithIdentity(ctx, id), stream)
		}),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id Identity
		switch {
		case len(o.Tokens) > 0:
			presented, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			found := false
			for _, t := range o.Tokens {
				if ok && t.matches(strings.TrimSpace(presented)) {
					id, found = Identity{Agent: t.Agent, StartRole: t.Role}, true
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
		switch {
		case r.Header.Get("Mcp-Session-Id") != "":
			id.Session = "mcp-" + r.Header.Get("Mcp-Session-Id")
		case r.Header.Get("X-Harness-Session") != "":
			id.Session = r.Header.Get("X-Harness-Session")
		default:
			id.Session = "http"
		}
		stream := &errorStream{} // this request's response
		mcpHandler.ServeHTTP(errorResponseWriter{w, stream}, r.WithContext(withStream(WithIdentity(r.Context(), id), stream)))
	})
}
