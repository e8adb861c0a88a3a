package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/ijson"
)

// DecisionMeta is the key of a refusal's _meta under which the gateway
// puts the decision: there, not in structuredContent, which a client holds
// to the tool's output schema (a refusal must stay readable).
const DecisionMeta = "agentharness/decision"

// route is where an exposed name leads: an upstream and its own name.
type route struct {
	up    *upstream
	name  string
	raw   json.RawMessage
	names *argNames // the names of the item's arguments, as listed
}

// named reads the "name" of a listed item.
func named(raw json.RawMessage, key string) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var s string
	json.Unmarshal(v[key], &s)
	return s
}

// rename is a listed item with its key set to name, every other field as
// it was.
func rename(raw json.RawMessage, key, name string) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	v[key] = mustJSON(name)
	return mustJSON(v)
}

// exposeName is a tool's or prompt's name as the agent sees it.
func (g *Gateway) exposeName(u *upstream, name string) string {
	if g.prefix {
		return u.cfg.Name + "__" + name
	}
	return name
}

// routes are the session's tools (or prompts: method prompts/list) by the
// names the agent sees, in order: the first upstream wins a clash, and
// ctx_session is the gateway's own.
func (s *session) routes(method string) ([]string, map[string]route) {
	var order []string
	out := map[string]route{}
	for _, u := range s.upstreams() {
		for _, it := range u.list(method) {
			exposed := s.g.exposeName(u, it.name)
			if _, clash := out[exposed]; clash || method == "tools/list" && exposed == SessionTool {
				continue
			}
			out[exposed] = route{up: u, name: it.name, raw: it.raw, names: it.names}
			order = append(order, exposed)
		}
	}
	return order, out
}

// route is routes(method)[exposed], found without making the map: the
// lists are read in place, upstream by upstream, and the first that lists
// the name wins. A call needs one route; making all of them cost a map
// and a name a listed item, every call.
func (s *session) route(method, exposed string) (route, bool) {
	if method == "tools/list" && exposed == SessionTool {
		return route{}, false
	}
	for _, u := range s.upstreams() {
		name := exposed
		if s.g.prefix {
			var ok bool
			if name, ok = strings.CutPrefix(exposed, u.cfg.Name+"__"); !ok {
				continue
			}
		}
		for _, it := range u.list(method) {
			if it.name == name {
				return route{up: u, name: it.name, raw: it.raw, names: it.names}, true
			}
		}
	}
	return route{}, false
}

// listedButForCase returns the name of a listed tool that exposed is but
// for case, if any.
func (s *session) listedButForCase(exposed string) (string, bool) {
	for _, u := range s.upstreams() {
		for _, it := range u.list("tools/list") {
			if name := s.g.exposeName(u, it.name); strings.EqualFold(name, exposed) {
				return name, true
			}
		}
	}
	return "", false
}

// toolRoute is where a call of a tool goes: the upstream that lists it;
// else, for a tool no upstream lists (yet: lists change), the upstream its
// prefix names, or the only or first one when names are not prefixed.
// Either way the call is decided by the name the agent called, so a tool
// that is not listed is governed as one that is; the upstream answers for
// a tool it does not have.
func (s *session) toolRoute(exposed string) (route, bool) {
	if rt, ok := s.route("tools/list", exposed); ok {
		return rt, true
	}
	ups := s.upstreams()
	if s.g.prefix {
		name, tool, ok := strings.Cut(exposed, "__")
		for _, u := range ups {
			if ok && u.cfg.Name == name && tool != "" {
				return route{up: u, name: tool}, true
			}
		}
		return route{}, false
	}
	if len(ups) == 0 {
		return route{}, false
	}
	return route{up: ups[0], name: exposed}, true
}

// sessionToolJSON is ctx_session as tools/list shows it.
var sessionToolJSON = mustJSON(map[string]any{
	"name": SessionTool,
	"description": "Your harness session. action=role: your role, its limits and the roles you may switch to; " +
		"action=role value=NAME: switch to role NAME (usage is kept); action=roles: every role; " +
		"action=budget: your budget; action=explain tool=NAME: why NAME would be allowed or denied now.",
	"inputSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{"type": "string", "enum": []string{"role", "roles", "budget", "explain"}},
			"value":  map[string]any{"type": "string", "description": "with action=role: the role to switch to"},
			"tool":   map[string]any{"type": "string", "description": "with action=explain: the tool to explain"},
		},
		"required": []string{"action"},
	},
})

// listTools shows the tools the session's role may call (as the policy
// says: its tool lists and shell policy), and ctx_session.
func (s *session) listTools(ctx context.Context) (json.RawMessage, *rpcError) {
	order, routes := s.routes("tools/list")
	listed := []contract.Tool{{Name: SessionTool}}
	for _, name := range order {
		rt := routes[name]
		listed = append(listed, contract.Tool{Name: name, Upstream: rt.up.cfg.Name, UpstreamTool: rt.name})
	}
	shown, err := s.g.o.Governor.Visible(ctx, s.id.key(), s.id.StartRole, listed)
	if err != nil {
		s.g.o.Logf("tools/list: %v", err) // fail closed: ctx_session only
	}
	var tools []json.RawMessage
	for _, name := range order {
		if shown[name] {
			tools = append(tools, rename(routes[name].raw, "name", name))
		}
	}
	// The upstreams' tools are charged; ctx_session is the harness's own.
	tools, note := s.chargeListed(ctx, "tools/list", tools)
	fields := map[string]json.RawMessage{"tools": mustJSON(append([]json.RawMessage{sessionToolJSON}, tools...))}
	if note != "" {
		addNote(fields, note)
	}
	return mustJSON(fields), nil
}

// textResult is a tool result of one text.
func textResult(text string, isError bool, structured any, meta map[string]any) json.RawMessage {
	r := map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}}
	if isError {
		r["isError"] = true
	}
	if structured != nil {
		r["structuredContent"] = structured
	}
	if meta != nil {
		r["_meta"] = meta
	}
	return mustJSON(r)
}

// CodeDenied is the JSON-RPC error code of a resource read or a prompt
// get the policy refused (a refused tool call is a tool error instead).
const CodeDenied = -32003

// refusalText is what a refused request says: the reasons, and how to look
// further.
func refusalText(d contract.Decision, what string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[harness] denied: %s was not %s.\n", d.Tool, what)
	for _, r := range d.Reasons {
		fmt.Fprintf(&b, "- %s: %s\n", r.Code, r.Message)
	}
	fmt.Fprintf(&b, "See why with ctx_session action=explain tool=%s; your role with action=role, your budget with action=budget.\n", d.Tool)
	b.WriteString(d.StatusLine())
	return b.String()
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

// arguments decodes a call's arguments for the policy, as the agent sent
// them: an object, nil when absent or null, anything else as it is (the
// policy refuses it). Arguments that another parser could read otherwise
// (a key given twice, see ijson.Ambiguity) are an error: they go on to the
// upstream as the agent wrote them.
func arguments(raw json.RawMessage) (any, error) {
	v, err := decodeArguments(raw)
	if err == nil && v != nil {
		err = ijson.Ambiguity(raw)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// decodeArguments decodes arguments as the policy reads them: numbers
// kept exact, nil when absent.
func decodeArguments(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// upstreamMeta is the agent's _meta for the upstream: without the keys of
// the agent's own connection (io.modelcontextprotocol/..., such as the
// protocol version of a stateless client), as the gateway's connection to
// the upstream has its own; a progress token and other keys are kept.
func upstreamMeta(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	for k := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return mustJSON(m)
}

// callTool governs a call of an upstream's tool: decided on the session's
// counters (a shell call takes its slot), sent on, its result charged
// before it goes back (cut to what the budget leaves), with the
// decision's warnings on it. A result the harness does not change goes
// back as the upstream wrote it.
func (s *session) callTool(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	p, err := readToolCall(params)
	if err != nil || p.Name == "" {
		return nil, &rpcError{Code: codeInvalidParams, Message: "tools/call: want a tool name"}
	}
	if p.Name == SessionTool {
		return s.sessionTool(ctx, p.Arguments), nil
	}
	rt, ok := s.toolRoute(p.Name)
	if !ok {
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown tool: " + p.Name}
	}
	if rt.raw == nil {
		if listed, ok := s.listedButForCase(p.Name); ok {
			// An upstream that looks its tools up without regard to case
			// would run the listed tool, which the policy did not decide.
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("unknown tool: %.64q; the tool listed is %.64q (names are exact)", p.Name, listed)}
		}
	}
	out, err := toolCallParams(rt.name, p.Arguments, upstreamMeta(p.Meta))
	if err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	return s.governed(ctx, governedCall{
		tool: p.Name, up: rt.up, upstreamName: rt.name, arguments: p.Arguments, names: rt.names,
		method: "tools/call", params: out, verb: "called",
	})
}

// governedCall is a request of the agent that the policy decides and
// whose result is charged: a tool call, a resource read, a prompt get.
type governedCall struct {
	tool         string // the name the policy decides (resource:URI, prompt:NAME)
	up           *upstream
	upstreamName string
	arguments    json.RawMessage
	names        *argNames // the names its arguments are listed with
	method       string
	params       json.RawMessage
	verb         string // "called", "read", "got": for the refusal's text
	// result reads the upstream's result into what is charged (nil: a
	// tool result).
	result func(json.RawMessage) (charged, error)
}

// charged is an upstream's result read for charging.
type charged interface {
	parts(ChargeOptions) []govern.Part
	apply(govern.Settlement, string)
	// note adds what the harness says of the result (its warnings).
	note(string)
	encode() json.RawMessage
}

// ApprovedByElicitation is who approved a call decided ask that the
// gateway let run (the decision log's custom.approved_by): the person at
// the agent's client, asked by an MCP elicitation. The client is the
// agent's: an ask through the gateway is as strong as the client that
// shows it to a person.
const ApprovedByElicitation = "elicitation"

// askApproval asks the person at the agent's client, by an elicitation,
// to approve the call d decided ask. It reports whether they accepted,
// and if not, why the call does not run: the client cannot ask (it
// declared no form elicitation), the person declined or dismissed it, or
// the question could not be put.
func (s *session) askApproval(ctx context.Context, c governedCall, args any, d contract.Decision) (bool, string) {
	if !s.canElicitForm() {
		return false, "The agent's client cannot ask a person (it declared no elicitation capability), so the call does not run."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The agent harness asks your approval. Agent %q (role %s) wants to %s %s", contract.Printable(s.id.Agent), d.Role, c.what(), d.Tool)
	if shown := shownArguments(args, maxShownArguments); shown != "" {
		fmt.Fprintf(&b, " with arguments %s", shown)
	}
	b.WriteString(".")
	for _, r := range d.Reasons {
		fmt.Fprintf(&b, " %s.", r.Message)
	}
	if len(d.Warnings) > 0 {
		for _, w := range d.Warnings {
			fmt.Fprintf(&b, " Warning: %s.", w.Message)
		}
	}
	b.WriteString(" Accept to let it run; decline to refuse it.")
	params := mustJSON(map[string]any{
		"message":         b.String(),
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
	})
	result, rerr := s.ask(ctx, inflightOf(ctx), "elicitation/create", params)
	if rerr != nil {
		return false, fmt.Sprintf("No person's approval: the question could not be asked (%s), so the call does not run.", rerr.Message)
	}
	var answer struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(result, &answer) != nil {
		return false, "No person's approval: the client's answer was not an elicitation result, so the call does not run."
	}
	switch answer.Action {
	case "accept":
		return true, ""
	case "decline":
		return false, "The person declined the call."
	default:
		return false, fmt.Sprintf("The person did not approve the call (%s).", contract.Printable(answer.Action))
	}
}

// maxShownArguments is how many bytes of a call's arguments the question
// of an ask shows.
const maxShownArguments = 2000

// shownArguments are a call's arguments as the person asked to approve it
// reads them ("" for none): as the policy decoded them, written again
// (whatever white space the agent put between them gone), characters a
// screen would hide or move escaped (see contract.Printable), and, past
// limit bytes, cut with a notice before them that says so and how much is
// not shown: a person must not approve a call whose arguments go on
// unseen without knowing it (a long harmless argument first, the command
// after it).
func shownArguments(args any, limit int) string {
	if args == nil {
		return ""
	}
	if m, ok := args.(map[string]any); ok && len(m) == 0 {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(args) != nil {
		return "(that cannot be shown)"
	}
	text := contract.Printable(strings.TrimSuffix(buf.String(), "\n"))
	if len(text) <= limit {
		return text
	}
	head := clip(text, limit)
	return fmt.Sprintf("(the first %d of their %d bytes; the other %d are not shown: decline unless you know what they hold) %s …",
		len(head), len(text), len(text)-len(head), head)
}

// canElicitForm reports whether the agent's client declared elicitation in
// form mode: elicitation {} (form, as the protocol's first version had it)
// or with form in it; a client of URL elicitations only cannot answer a
// question of the harness.
func (s *session) canElicitForm() bool {
	s.mu.Lock()
	raw, ok := s.client.caps["elicitation"]
	s.mu.Unlock()
	if !ok {
		return false
	}
	var modes map[string]json.RawMessage
	if json.Unmarshal(raw, &modes) != nil {
		return false
	}
	_, form := modes["form"]
	_, url := modes["url"]
	return form || !url
}

// fail is how a governed request says it was not answered: over a tool
// call a tool error (text for the agent, the decision in _meta); over a
// resource read or a prompt get, which have no error results, a JSON-RPC
// error (the text its message, the decision its data).
func (c governedCall) fail(code int, text string, d *contract.Decision) (json.RawMessage, *rpcError) {
	if c.method == "tools/call" {
		var meta map[string]any
		if d != nil {
			meta = map[string]any{DecisionMeta: d}
		}
		return textResult(text, true, nil, meta), nil
	}
	e := &rpcError{Code: code, Message: text}
	if d != nil {
		e.Data = mustJSON(map[string]any{DecisionMeta: d})
	}
	return nil, e
}

func (s *session) governed(ctx context.Context, c governedCall) (json.RawMessage, *rpcError) {
	g := s.g.o.Governor
	args, err := arguments(c.arguments)
	if err == nil {
		err = c.names.check(args)
	}
	if err != nil {
		s.g.o.Logf("refused a %s of %q (agent %q, session %q), undecided: its arguments: %v", c.what(), c.tool, s.id.Agent, s.id.Session, err)
		return nil, &rpcError{Code: codeInvalidParams, Message: "arguments: " + err.Error()}
	}
	k := s.id.key()
	call := govern.Call{Session: k, Tool: c.tool, Upstream: c.up.cfg.Name, UpstreamTool: c.upstreamName,
		Arguments: args, Role: s.id.StartRole, Reserve: true, Background: true, Later: true, Prefetch: true, Client: s.clientName()}
	o, err := g.Decide(ctx, call)
	if err != nil {
		return c.fail(codeInternal, fmt.Sprintf("[harness] the %s was not made: the harness could not decide it (%v)", c.what(), err), nil)
	}
	defer o.Wait() // the decision's log entry and events are written before the answer goes back
	d := o.Decision
	if !o.Allowed {
		o.Start() // no request goes (yet): the refusal, or the question, is logged now
	}
	if !o.Allowed && d.Decision == contract.Ask {
		// A person approves the call, or it does not run.
		approved, why := s.askApproval(ctx, c, args, d)
		if !approved {
			return c.fail(CodeDenied, refusalText(d, c.verb)+"\n[harness] "+why, &d)
		}
		// Decided again, now approved: the counters may have moved while
		// the person thought, and the shell slot is taken only now.
		call.Approved = ApprovedByElicitation
		if o, err = g.Decide(ctx, call); err != nil {
			return c.fail(codeInternal, fmt.Sprintf("[harness] the %s was not made: the harness could not decide it (%v)", c.what(), err), nil)
		}
		defer o.Wait()
		d = o.Decision
		if !o.Allowed {
			o.Start()
		}
	}
	if !o.Allowed {
		return c.fail(CodeDenied, refusalText(d, c.verb), &d)
	}
	s.goingTo(ctx, c.up)
	// What the session may still spend is worked out while the call runs
	// (Call.Prefetch): the charge of its result need not wait for the
	// policy.
	headroom := o.Headroom
	// The decision's log entry and the allowance are worked out while
	// the upstream works: once the request is written, on this goroutine
	// (Call.Later).
	resp, err := c.up.call(whenSent(ctx, func(written bool) {
		if written {
			o.Run()
		} else {
			o.Start()
		}
	}), c.method, c.params)
	if err != nil {
		// What the agent is told says first what was charged, so that it
		// (and whoever reconciles its bill) need not guess; the
		// upstream's own words come after.
		call, args := "call", "arguments"
		if c.method != "tools/call" {
			call, args = "request", "parameters"
		}
		var ns notSent
		charged := fmt.Sprintf("the %s was not sent, and nothing was charged", call)
		switch {
		case errors.As(err, &ns):
			if o.Reserved {
				if rerr := g.ReleaseShell(context.WithoutCancel(ctx), k, c.tool, o.Period); rerr != nil {
					s.g.o.Logf("giving back the shell slot of %s: %v", c.tool, rerr)
					charged = fmt.Sprintf("the %s was not sent, yet its shell slot could not be given back (%v)", call, rerr)
				}
			}
		default:
			// Sent, and cancelled or lost on the way back: the upstream
			// had the arguments, whose cost is the call's.
			charged = fmt.Sprintf("the %s had reached it, and its %s were charged", call, args)
			if _, serr := g.Settle(context.WithoutCancel(ctx), govern.Output{Session: k, Role: s.id.StartRole, Tool: c.tool, Arguments: string(c.arguments)}); serr != nil {
				s.g.o.Logf("charging the arguments of %s: %v", c.tool, serr)
				charged = fmt.Sprintf("the %s had reached it; its %s could not be charged (%v)", call, args, serr)
			}
		}
		if errors.Is(err, ErrUpstreamDown) {
			return c.fail(codeInternal, fmt.Sprintf("[harness] %s: %s. The gateway is restarting it; try again shortly.", charged, s.errorText(ctx, c.tool, err)), nil)
		}
		return nil, &rpcError{Code: codeInternal, Message: s.errorText(ctx, c.tool, err)}
	}
	if resp.Error != nil {
		return nil, s.chargeError(ctx, c.tool, string(c.arguments), resp.Error)
	}
	read := c.result
	if read == nil {
		read = func(raw json.RawMessage) (charged, error) { return readToolResult(raw) }
	}
	r, err := read(resp.Result)
	if err != nil { // not a result the gateway can read: charged whole as text, or withheld
		st, err := g.Settle(ctx, govern.Output{Session: k, Role: s.id.StartRole, Tool: c.tool, Arguments: string(c.arguments), Parts: []govern.Part{{Text: string(resp.Result)}}, DecisionID: o.DecisionID})
		if err != nil || st.Withheld > 0 {
			return c.fail(codeInternal, fmt.Sprintf("[harness] the result of %s was withheld: it is not a result the harness can read, and it %s", c.tool, withheldReason(err, st)), nil)
		}
		return resp.Result, nil
	}
	changed := false
	if d.CompressOutput {
		if tr, ok := r.(*toolResult); ok {
			for i, b := range tr.blocks {
				if b.Type == "text" {
					tr.setText(i, Compress(b.Text, s.g.o.Compress))
					changed = true
				}
			}
		}
	}
	st, err := g.Settle(ctx, govern.Output{Session: k, Role: s.id.StartRole, Tool: c.tool, Arguments: string(c.arguments), Parts: r.parts(s.g.o.Charging), Counters: &o.Counters, Background: true,
		DecisionID: o.DecisionID, Headroom: headroom})
	if err != nil {
		// Nothing is released that was not charged.
		return c.fail(codeInternal, fmt.Sprintf("[harness] the result of %s was withheld: it could not be charged (%v)", c.tool, err), nil)
	}
	if st.Withheld > 0 {
		r.apply(st, s.withheldWhy(ctx, st))
		changed = true
	}
	if n := notes(o); n != "" {
		r.note(n)
		changed = true
	}
	if !changed {
		return resp.Result, nil
	}
	return r.encode(), nil
}

// withheldReason says why an unreadable result was withheld.
func withheldReason(err error, st govern.Settlement) string {
	if err != nil {
		return fmt.Sprintf("could not be charged (%v)", err)
	}
	return fmt.Sprintf("costs %d tokens, more than the session's budget has left", st.Wanted)
}

// what names the request for the agent.
func (c governedCall) what() string {
	switch c.method {
	case "resources/read":
		return "read"
	case "prompts/get":
		return "get"
	}
	return "call"
}

// withheldWhy says why a result was cut: the budget left.
func (s *session) withheldWhy(ctx context.Context, st govern.Settlement) string {
	line := ""
	if status, err := s.g.o.Governor.Status(ctx, s.id.key(), ""); err == nil {
		line = " " + status.StatusLine()
	}
	return fmt.Sprintf("%d of its %d tokens are beyond what the session's budget has left.%s", st.Withheld, st.Wanted, line)
}

// chargeError charges an upstream's JSON-RPC error of a request of tool
// (its message and data reach the agent; arguments: what the upstream was
// sent of the agent's, charged with it) and returns it, its message cut
// to what the budget leaves.
func (s *session) chargeError(ctx context.Context, tool, arguments string, e *rpcError) *rpcError {
	st, err := s.g.o.Governor.Settle(ctx, govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: tool, Arguments: arguments,
		Parts: []govern.Part{{Text: e.Message}, {Text: string(e.Data)}}})
	if err != nil {
		return &rpcError{Code: e.Code, Message: fmt.Sprintf("[harness] the error of %s was withheld: it could not be charged (%v)", tool, err)}
	}
	if st.Withheld == 0 {
		return e
	}
	out := &rpcError{Code: e.Code, Message: st.Parts[0].Text + " [harness] the rest withheld: " + s.withheldWhy(ctx, st)}
	if !st.Parts[1].Cut && !st.Parts[1].Dropped {
		out.Data = e.Data
	}
	return out
}

// clientName is what the agent's client called itself, for the decision
// log's labels.
func (s *session) clientName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client.name
}
