package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/explain"
	"github.com/agentharness/harness/govern"
)

// SessionTool is the gateway's own tool: role, budget, explanations.
const SessionTool = contract.SessionTool

// Prefix modes: when upstream tool names get "<upstream>__" before them.
const (
	PrefixAuto   = "auto"   // when there are several upstreams
	PrefixAlways = "always" //
	PrefixNever  = "never"  // first upstream wins a name clash
)

// Options are a Gateway's parts.
type Options struct {
	Governor  *govern.Governor
	Upstreams []UpstreamConfig
	Prefix    string
	Compress  CompressOptions
	// Stderr receives the upstreams' stderr.
	Stderr io.Writer
	// Logf reports what happens to upstreams.
	Logf func(format string, args ...any)
	// Version is the harness's, which the gateway gives as its own to
	// clients and upstreams.
	Version string
}

// Gateway is an MCP server governing the tools of its upstreams.
type Gateway struct {
	o   Options
	srv *server.MCPServer
	ups []*upstream

	mu      sync.Mutex
	routes  map[string]route
	charges pending
}

type route struct {
	up   *upstream
	name string // the tool's name upstream
}

// New starts the upstreams and builds the server. An upstream that cannot
// start is reported and retried; the gateway starts anyway.
func New(ctx context.Context, o Options) (*Gateway, error) {
	if o.Governor == nil || o.Version == "" {
		return nil, errors.New("gateway: a governor and a version are required")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Prefix == "" {
		o.Prefix = PrefixAuto
	}
	g := &Gateway{o: o, routes: map[string]route{}}
	// An upstream's JSON-RPC error is noted under the request's id, to be
	// put back whole in the answer (see UpstreamError).
	hooks := &server.Hooks{}
	hooks.AddOnError(func(ctx context.Context, id any, _ mcp.MCPMethod, _ any, err error) {
		if ue := (*UpstreamError)(nil); errors.As(err, &ue) {
			note(ctx, id, ue)
		}
	})
	g.srv = server.NewMCPServer("agent-harness", o.Version,
		server.WithHooks(hooks),
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithToolFilter(g.filter),
		server.WithInstructions("Tool calls pass through the Agent Harness, which governs them by your role and budget. "+
			"Use ctx_session to see your role (action=role), budget (action=budget), and why a tool is denied (action=explain tool=NAME)."),
	)
	seen := map[string]bool{}
	for _, c := range o.Upstreams {
		if c.Name == "" || seen[c.Name] || strings.Contains(c.Name, "__") {
			return nil, fmt.Errorf("gateway: upstream name %q: want unique names without \"__\"", c.Name)
		}
		seen[c.Name] = true
		u := newUpstream(c, o.Version, o.Stderr, o.Logf, g.sync)
		if err := u.start(ctx); err != nil {
			o.Logf("upstream %s: %v (retrying)", c.Name, err)
		}
		g.ups = append(g.ups, u)
	}
	g.sync()
	return g, nil
}

// MCPServer is the underlying server, for transports.
func (g *Gateway) MCPServer() *server.MCPServer { return g.srv }

// ServeStdio serves one client over in and out, as id.
func (g *Gateway) ServeStdio(ctx context.Context, id Identity, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(g.srv)
	stream := &errorStream{}
	s.SetContextFunc(func(ctx context.Context) context.Context { return withStream(WithIdentity(ctx, id), stream) })
	return s.Listen(ctx, in, errorWriter{out, stream})
}

// Close waits for the charges under way and stops the upstreams.
func (g *Gateway) Close() {
	g.charges.waitAll()
	for _, u := range g.ups {
		u.close()
	}
}

// sync exposes the upstreams' current tools, and ctx_session.
func (g *Gateway) sync() {
	prefix := g.o.Prefix == PrefixAlways || (g.o.Prefix == PrefixAuto && len(g.ups) > 1)
	routes := map[string]route{}
	var tools []server.ServerTool
	for _, u := range g.ups {
		list, _ := u.snapshot()
		for _, t := range list {
			name := t.Name
			if prefix {
				name = u.cfg.Name + "__" + t.Name
			}
			if name == SessionTool {
				g.o.Logf("upstream %s: its tool %s is shadowed by the harness's own", u.cfg.Name, name)
				continue
			}
			if _, clash := routes[name]; clash {
				g.o.Logf("upstream %s: tool %s is already exposed by another upstream; skipped", u.cfg.Name, name)
				continue
			}
			routes[name] = route{up: u, name: t.Name}
			t.Name = name
			tools = append(tools, server.ServerTool{Tool: t, Handler: g.proxy(name)})
		}
	}
	tools = append(tools, server.ServerTool{Tool: sessionTool(), Handler: g.session})
	g.mu.Lock()
	g.routes = routes
	g.mu.Unlock()
	g.srv.SetTools(tools...)
}

// filter shows a session only the tools its role may call (as the policy
// says: its tool lists and shell policy), and ctx_session. mcp-go runs tool
// filters for tools/list and, with the one tool asked for, at call time; a
// call is let through here so that the governed handler answers a deny
// with its reasons (ctx_session is always registered, so a tools/list
// filter always sees two tools or more).
func (g *Gateway) filter(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if len(tools) <= 1 {
		return tools
	}
	id := identity(ctx)
	g.charges.wait(id.key())
	listed := make([]contract.Tool, len(tools))
	g.mu.Lock()
	for i, t := range tools {
		listed[i] = g.origin(t.Name)
	}
	g.mu.Unlock()
	shown, err := g.o.Governor.Visible(ctx, id.key(), id.StartRole, listed)
	if err != nil {
		g.o.Logf("tools/list: %v", err) // fail closed: ctx_session only
	}
	return slices.DeleteFunc(tools, func(t mcp.Tool) bool { return t.Name != SessionTool && !shown[t.Name] })
}

// origin is the tool exposed as name, with the upstream it comes from and
// that upstream's own name for it (g.mu held).
func (g *Gateway) origin(name string) contract.Tool {
	if rt, ok := g.routes[name]; ok {
		return contract.Tool{Name: name, Upstream: rt.up.cfg.Name, UpstreamTool: rt.name}
	}
	return contract.Tool{Name: name}
}

// proxy is the governed handler of an upstream tool.
func (g *Gateway) proxy(exposed string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := identity(ctx)
		args := req.Params.Arguments // as the agent sent them: an object, or malformed
		g.charges.wait(id.key())
		g.mu.Lock()
		tool := g.origin(exposed)
		g.mu.Unlock()
		// The decision's log entry and events are written while the
		// upstream works, and before the result goes back.
		o, err := g.o.Governor.Decide(ctx, govern.Call{Session: id.key(), Tool: exposed, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
			Arguments: args, Role: id.StartRole, Reserve: true, Background: true, Client: clientOf(ctx)})
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("[harness] the call was not made: the harness could not decide it (%v)", err)), nil
		}
		defer o.Wait()
		d := o.Decision
		if !o.Allowed {
			return denied(d), nil
		}
		g.mu.Lock()
		rt, ok := g.routes[exposed]
		g.mu.Unlock()
		if !ok {
			return mcp.NewToolResultError(fmt.Sprintf("[harness] tool %s is no longer offered by any upstream", exposed)), nil
		}
		res, err := rt.up.call(ctx, rt.name, req)
		if errors.Is(err, ErrUpstreamDown) {
			res = mcp.NewToolResultError(fmt.Sprintf("[harness] %v. The gateway is restarting it; try again shortly.", err))
		} else if err != nil {
			return nil, err // the upstream's own JSON-RPC error, as it is
		}
		if d.CompressOutput {
			for i, c := range res.Content {
				if t, ok := c.(mcp.TextContent); ok {
					t.Text = Compress(t.Text, g.o.Compress)
					res.Content[i] = t
				}
			}
		}
		if note := notes(o); note != "" {
			res.Content = append(res.Content, mcp.NewTextContent(note))
		}
		out := agentText(res)
		// Charge what reaches the agent, after the result is on its way;
		// the session's next decision waits for it.
		done := g.charges.start(id.key())
		go func() {
			defer done()
			argsJSON, _ := json.Marshal(args)
			result := govern.Result{Session: id.key(), Tool: exposed, Arguments: string(argsJSON), Output: out}
			if _, err := g.o.Governor.Record(context.WithoutCancel(ctx), result); err != nil {
				g.o.Logf("charging %s: %v", exposed, err)
			}
		}()
		return res, nil
	}
}

// agentText is the text of a result that goes into the agent's context:
// its text content and the text of its embedded resources. (Images, audio
// and binary resources are not counted: their tokens depend on the model.)
func agentText(res *mcp.CallToolResult) string {
	var out strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			out.WriteString(c.Text)
		case mcp.EmbeddedResource:
			if r, ok := c.Resource.(mcp.TextResourceContents); ok {
				out.WriteString(r.Text)
			}
		}
	}
	return out.String()
}

// denied is the tool error of a refused call: the reasons, how to look
// further, and the decision as structured content.
func denied(d contract.Decision) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "[harness] denied: %s was not called.\n", d.Tool)
	for _, r := range d.Reasons {
		fmt.Fprintf(&b, "- %s: %s\n", r.Code, r.Message)
	}
	fmt.Fprintf(&b, "See why with ctx_session action=explain tool=%s; your role with action=role, your budget with action=budget.\n", d.Tool)
	b.WriteString(d.StatusLine())
	res := mcp.NewToolResultError(b.String())
	res.StructuredContent = d
	return res
}

// notes is what the harness appends to an allowed call's result: the
// warnings, and in shadow mode the reasons it would have been denied.
func notes(o govern.Outcome) string {
	d := o.Decision
	var b strings.Builder
	if o.Shadowed {
		b.WriteString("[harness] shadow mode: this call would have been denied:\n")
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "- %s: %s\n", r.Code, r.Message)
		}
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "[harness] warning: %s\n", w.Message)
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString(d.StatusLine())
	return b.String()
}

func sessionTool() mcp.Tool {
	return mcp.NewTool(SessionTool,
		mcp.WithDescription("Your harness session. action=role: your role, its limits and the roles you may switch to; "+
			"action=role value=NAME: switch to role NAME (usage is kept); action=roles: every role; "+
			"action=budget: your budget; action=explain tool=NAME: why NAME would be allowed or denied now."),
		mcp.WithString("action", mcp.Required(), mcp.Enum("role", "roles", "budget", "explain")),
		mcp.WithString("value", mcp.Description("with action=role: the role to switch to")),
		mcp.WithString("tool", mcp.Description("with action=explain: the tool to explain")),
	)
}

// session is ctx_session: never blocked, and its switches go through the
// switch rules. What it answers comes from the governor; this renders it.
func (g *Gateway) session(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := identity(ctx)
	g.charges.wait(id.key()) // report the budget with every call charged
	gov := g.o.Governor
	action, value, tool := req.GetString("action", ""), req.GetString("value", ""), req.GetString("tool", "")
	switch {
	case action == "role" && value != "":
		o, err := gov.Switch(ctx, id.key(), value, contract.ByAgent)
		if err != nil {
			return mcp.NewToolResultError("[harness] the switch could not be made: " + err.Error()), nil
		}
		if !o.Decision.Allowed {
			var b strings.Builder
			fmt.Fprintf(&b, "[harness] switch to %s refused; you stay in role %s.\n", value, o.Counters.Role)
			for _, r := range o.Decision.Reasons {
				fmt.Fprintf(&b, "- %s (%s): %s\n", r.Code, r.Rule, r.Message)
			}
			res := mcp.NewToolResultError(b.String())
			res.StructuredContent = o.Decision
			return res, nil
		}
		text := fmt.Sprintf("Role switched: %s → %s. Usage is kept; the new role's limits apply.\n%s", o.Decision.From, o.Decision.To, o.Status.StatusLine())
		if !o.Switched {
			text = fmt.Sprintf("You are already in role %s.\n%s", value, o.Status.StatusLine())
		}
		return mcp.NewToolResultStructured(o.Decision, text), nil
	case action == "role":
		info, err := gov.RoleInfo(ctx, id.key(), id.StartRole)
		if err != nil {
			return mcp.NewToolResultError("[harness] " + err.Error()), nil
		}
		r := info.Role
		if r == nil {
			return mcp.NewToolResultError(fmt.Sprintf("[harness] your role %s is not defined", info.Status.Role)), nil
		}
		text := fmt.Sprintf("Role %s: %s\nshell_policy %s; allowed tools: %s; denied: %s\nYou may switch to: %s (only an operator can give you: %s)\nSession %s of agent %s\n%s",
			r.Name, r.Description, r.ShellPolicy, list(r.Allowed), list(r.Denied), list(info.MayEnter()), list(info.OperatorOnly()),
			id.Session, id.Agent, info.Status.StatusLine())
		return mcp.NewToolResultStructured(map[string]any{"role": r, "may_switch_to": info.MayEnter(), "budget": info.Status.Budget,
			"signal": info.Status.Signal, "session": id.Session, "agent": id.Agent}, text), nil
	case action == "roles":
		info, err := gov.RoleInfo(ctx, id.key(), id.StartRole)
		if err != nil {
			return mcp.NewToolResultError("[harness] " + err.Error()), nil
		}
		var b strings.Builder
		for _, t := range info.Targets {
			mark := "  "
			switch {
			case t.Current:
				mark = "* "
			case !t.Open:
				mark = "x "
			}
			fmt.Fprintf(&b, "%s%s: %s\n", mark, t.Name, t.Description)
		}
		b.WriteString("(* your role; x: only an operator can switch you to it)\n")
		return mcp.NewToolResultText(b.String()), nil
	case action == "budget":
		st, err := gov.Status(ctx, id.key(), id.StartRole)
		if err != nil {
			return mcp.NewToolResultError("[harness] " + err.Error()), nil
		}
		return mcp.NewToolResultStructured(map[string]any{"role": st.Role, "signal": st.Signal, "budget": st.Budget}, st.StatusLine()), nil
	case action == "explain" && tool != "":
		x, err := gov.Explain(ctx, id.key(), id.StartRole, tool, nil)
		if err != nil {
			return mcp.NewToolResultError("[harness] " + err.Error()), nil
		}
		d := x.Decision
		var b strings.Builder
		fmt.Fprintf(&b, "%s would be: %s (without arguments; policies on arguments may decide otherwise)\n", tool, d.Decision)
		for _, r := range append(d.Reasons, d.Warnings...) {
			fmt.Fprintf(&b, "- %s: %s\n", r.Code, r.Message)
		}
		explain.Write(&b, x.Explanation, x.Role)
		return mcp.NewToolResultStructured(d, b.String()), nil
	}
	return mcp.NewToolResultError(`[harness] ctx_session: want action=role (value=NAME to switch), action=roles, action=budget, or action=explain tool=NAME`), nil
}

func list(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// Tools returns the names the gateway exposes now (for tests and status).
func (g *Gateway) Tools() []string {
	return slices.Sorted(maps.Keys(g.srv.ListTools()))
}
