package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
)

// Resources and prompts are governed as tools are, under names of their
// own: reading the resource of URI u is the tool "resource:u", getting
// the prompt p is "prompt:p" (u and p as the agent sees them, with their
// upstream's prefix when there is one), so a role's allowed and denied
// patterns say which it may use ("resource:*", "resource:file:///repo/*",
// "prompt:review*").

// Policy names of resources and prompts.
const (
	ResourcePrefix = "resource:"
	PromptPrefix   = "prompt:"
)

// exposeURI is a resource's URI (or URI template) as the agent sees it:
// "<upstream>:<uri>" when names are prefixed.
func (g *Gateway) exposeURI(u *upstream, uri string) string {
	if g.prefix {
		return u.cfg.Name + ":" + uri
	}
	return uri
}

// resourceRoute is the upstream of a URI the agent gave, and the URI as
// that upstream knows it: by its prefix, when names are prefixed; else
// the upstream that lists it, else the first that offers resources (a URI
// of a template is not listed).
func (s *session) resourceRoute(exposed string) (*upstream, string, bool) {
	ups := s.upstreams()
	if s.g.prefix {
		name, uri, ok := strings.Cut(exposed, ":")
		for _, u := range ups {
			if ok && u.cfg.Name == name {
				return u, uri, true
			}
		}
		return nil, "", false
	}
	for _, u := range ups {
		for _, it := range u.list("resources/list") {
			if it.name == exposed {
				return u, exposed, true
			}
		}
	}
	for _, u := range ups {
		if u.capability("resources") != nil {
			return u, exposed, true
		}
	}
	return nil, "", false
}

// visible is which of the names (policy names, of the upstream's items)
// the session's role may use. On an error it is none: fail closed.
func (s *session) visible(ctx context.Context, tools []contract.Tool) map[string]bool {
	shown, err := s.g.o.Governor.Visible(ctx, s.id.key(), s.id.StartRole, tools)
	if err != nil {
		s.g.o.Logf("listing: %v", err)
		return map[string]bool{}
	}
	return shown
}

// listed are an upstream list's items the role may use, by the key that
// names them, renamed as the agent sees them; the first upstream wins a
// clash.
func (s *session) listed(ctx context.Context, method, key, policyPrefix string, expose func(*upstream, string) string) []json.RawMessage {
	type listedItem struct {
		raw     json.RawMessage
		exposed string
	}
	var items []listedItem
	var tools []contract.Tool
	seen := map[string]bool{}
	for _, u := range s.upstreams() {
		for _, it := range u.list(method) {
			name := it.name
			exposed := expose(u, name)
			if seen[exposed] {
				continue
			}
			seen[exposed] = true
			items = append(items, listedItem{it.raw, exposed})
			tools = append(tools, contract.Tool{Name: policyPrefix + exposed, Upstream: u.cfg.Name, UpstreamTool: policyPrefix + name})
		}
	}
	shown := s.visible(ctx, tools)
	out := []json.RawMessage{}
	for _, it := range items {
		if shown[policyPrefix+it.exposed] {
			out = append(out, rename(it.raw, key, it.exposed))
		}
	}
	return out
}

// listResult is a list's result: its items under key, charged (see
// chargeListed), with a note when some were withheld.
func (s *session) listResult(ctx context.Context, method, key string, items []json.RawMessage) json.RawMessage {
	items, note := s.chargeListed(ctx, method, items)
	fields := map[string]json.RawMessage{key: mustJSON(items)}
	if note != "" {
		addNote(fields, note)
	}
	return mustJSON(fields)
}

// maxListCharged bounds the listed items a session remembers it was
// charged for: past it, an item is charged each time it is listed.
const maxListCharged = 4096

// chargeListed charges the items of a list the agent is given (what an
// upstream says of its tools, resources, templates and prompts reaches
// the agent's context, as any text of the upstream's), each as its JSON,
// once a session: an item listed again as it was is in the agent's
// context already. It returns the items that may go: one the budget
// cannot take whole is not listed, and note says so ("" when all go).
func (s *session) chargeListed(ctx context.Context, method string, items []json.RawMessage) ([]json.RawMessage, string) {
	sums := make([][sha256.Size]byte, len(items))
	var fresh []int
	var parts []govern.Part
	s.mu.Lock()
	for i, it := range items {
		sums[i] = sha256.Sum256(it)
		if !s.listCharged[sums[i]] {
			fresh = append(fresh, i)
			parts = append(parts, govern.Part{Text: string(it), Whole: true})
		}
	}
	s.mu.Unlock()
	if len(fresh) == 0 {
		return items, ""
	}
	withheld := map[int]bool{}
	st, err := s.g.o.Governor.Settle(ctx, govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: method, Parts: parts})
	s.mu.Lock()
	for j, i := range fresh {
		switch {
		case err != nil || st.Parts[j].Cut || st.Parts[j].Dropped:
			withheld[i] = true
		case len(s.listCharged) < maxListCharged:
			s.listCharged[sums[i]] = true
		}
	}
	s.mu.Unlock()
	if len(withheld) == 0 {
		return items, ""
	}
	kept := make([]json.RawMessage, 0, len(items)-len(withheld))
	for i, it := range items {
		if !withheld[i] {
			kept = append(kept, it)
		}
	}
	why := "they could not be charged: "
	if err != nil {
		why += err.Error()
	} else {
		why = s.withheldWhy(ctx, st)
	}
	return kept, fmt.Sprintf("%d of the items listed withheld: %s", len(withheld), why)
}

func (s *session) listResources(ctx context.Context) (json.RawMessage, *rpcError) {
	return s.listResult(ctx, "resources/list", "resources", s.listed(ctx, "resources/list", "uri", ResourcePrefix, s.g.exposeURI)), nil
}

// listTemplates lists the templates whose URI template, as text, the
// role's patterns allow as a resource name.
func (s *session) listTemplates(ctx context.Context) (json.RawMessage, *rpcError) {
	return s.listResult(ctx, "resources/templates/list", "resourceTemplates", s.listed(ctx, "resources/templates/list", "uriTemplate", ResourcePrefix, s.g.exposeURI)), nil
}

func (s *session) listPrompts(ctx context.Context) (json.RawMessage, *rpcError) {
	return s.listResult(ctx, "prompts/list", "prompts", s.listed(ctx, "prompts/list", "name", PromptPrefix, s.g.exposeName)), nil
}

// uriParams reads the uri (and _meta) of a request's params.
func uriParams(method string, params json.RawMessage) (string, json.RawMessage, *rpcError) {
	var p struct {
		URI  string          `json:"uri"`
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		return "", nil, &rpcError{Code: codeInvalidParams, Message: method + ": want a uri"}
	}
	if climbs(p.URI) {
		return "", nil, climbing(method)
	}
	return p.URI, p.Meta, nil
}

// climbs reports whether a URI has a dot segment ("." or "..", as it is
// or percent-encoded): it may name another resource than the policy is
// asked about ("resource:file:///repo/*" allows file:///repo/../x).
func climbs(uri string) bool {
	uri, _, _ = strings.Cut(uri, "#")
	uri, _, _ = strings.Cut(uri, "?")
	if decoded, err := url.PathUnescape(uri); err == nil {
		uri = decoded
	}
	for _, seg := range strings.FieldsFunc(uri, func(r rune) bool { return r == '/' || r == '\\' }) {
		// A URL parser of the WHATWG's strips the spaces that end a URL
		// (and Go's keeps them): ".. " is ".." to it.
		if seg = strings.TrimSpace(seg); seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

func climbing(method string) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: method + ": [harness] a URI with . or .. segments is not passed on: give the resource's own URI"}
}

// readResource governs a read of a resource as a call of the tool
// "resource:<uri>": decided, then charged for its contents before they go
// back, cut to what the budget leaves.
func (s *session) readResource(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	exposed, meta, rerr := uriParams("resources/read", params)
	if rerr != nil {
		return nil, rerr
	}
	u, uri, ok := s.resourceRoute(exposed)
	if !ok {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "resource not found: " + exposed, Data: mustJSON(map[string]string{"uri": exposed})}
	}
	out := map[string]any{"uri": uri}
	if m := upstreamMeta(meta); m != nil {
		out["_meta"] = m
	}
	return s.governed(ctx, governedCall{
		tool: ResourcePrefix + exposed, up: u, upstreamName: ResourcePrefix + uri,
		arguments: mustJSON(map[string]string{"uri": exposed}),
		method:    "resources/read", params: mustJSON(out), verb: "read",
		result: func(raw json.RawMessage) (charged, error) { return readContents(raw) },
	})
}

// codeResourceNotFound is MCP's error of a resource that is not there.
const codeResourceNotFound = -32002

// subscribe passes a subscription to a resource the role may read on to
// its upstream.
func (s *session) subscribe(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *rpcError) {
	exposed, meta, rerr := uriParams(method, params)
	if rerr != nil {
		return nil, rerr
	}
	u, uri, ok := s.resourceRoute(exposed)
	if !ok {
		return nil, &rpcError{Code: codeResourceNotFound, Message: "resource not found: " + exposed, Data: mustJSON(map[string]string{"uri": exposed})}
	}
	if !subscribes(u.capability("resources")) {
		return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("upstream %s does not support subscriptions", u.cfg.Name)}
	}
	name := ResourcePrefix + exposed
	if method == "resources/subscribe" && !s.visible(ctx, []contract.Tool{{Name: name, Upstream: u.cfg.Name, UpstreamTool: ResourcePrefix + uri}})[name] {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("[harness] denied: your role may not read %s (see ctx_session action=explain tool=%s)", exposed, name)}
	}
	out := map[string]any{"uri": uri}
	if m := upstreamMeta(meta); m != nil {
		out["_meta"] = m
	}
	if _, rerr := s.forward(ctx, u, name, method, mustJSON(out)); rerr != nil {
		return nil, rerr
	}
	// A subscription's result says nothing (MCP's is empty): what the
	// upstream put in it is not passed on.
	return json.RawMessage(`{}`), nil
}

// subscribes reports whether a resources capability offers subscriptions.
func subscribes(capability json.RawMessage) bool {
	var c struct {
		Subscribe bool `json:"subscribe"`
	}
	return capability != nil && json.Unmarshal(capability, &c) == nil && c.Subscribe
}

// forward sends a request about tool (the policy's name of the prompt or
// resource) on to an upstream and gives back its result as it came, or
// its JSON-RPC error charged (see chargeError): the caller passes on
// what of the result the agent may have.
func (s *session) forward(ctx context.Context, u *upstream, tool, method string, params json.RawMessage) (json.RawMessage, *rpcError) {
	s.goingTo(ctx, u)
	resp, err := u.call(ctx, method, params)
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: s.errorText(ctx, tool, err)}
	}
	if resp.Error != nil {
		return nil, s.chargeError(ctx, tool, "", resp.Error)
	}
	return resp.Result, nil
}

// getPrompt governs a get of a prompt as a call of the tool
// "prompt:<name>" with the prompt's arguments: decided, then charged for
// its messages before they go back, cut to what the budget leaves.
func (s *session) getPrompt(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Name == "" {
		return nil, &rpcError{Code: codeInvalidParams, Message: "prompts/get: want a prompt name"}
	}
	rt, ok := s.route("prompts/list", p.Name)
	if !ok {
		return nil, &rpcError{Code: codeInvalidParams, Message: "unknown prompt: " + p.Name}
	}
	out := map[string]any{"name": rt.name}
	if len(p.Arguments) > 0 {
		out["arguments"] = p.Arguments
	}
	if m := upstreamMeta(p.Meta); m != nil {
		out["_meta"] = m
	}
	return s.governed(ctx, governedCall{
		tool: PromptPrefix + p.Name, up: rt.up, upstreamName: PromptPrefix + rt.name, arguments: p.Arguments, names: rt.names,
		method: "prompts/get", params: mustJSON(out), verb: "got",
		result: func(raw json.RawMessage) (charged, error) { return readPrompt(raw) },
	})
}

// complete passes a completion request on to the upstream of the prompt
// or resource it is about, if the role may use it, and charges the values
// that come back (the agent's client may show them to its model).
func (s *session) complete(ctx context.Context, params json.RawMessage) (json.RawMessage, *rpcError) {
	var p map[string]json.RawMessage
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["ref"], &ref) != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: "completion/complete: want a ref"}
	}
	var u *upstream
	var name, policy string
	switch ref.Type {
	case "ref/prompt":
		rt, ok := s.route("prompts/list", ref.Name)
		if !ok {
			return nil, &rpcError{Code: codeInvalidParams, Message: "unknown prompt: " + ref.Name}
		}
		u, name, policy = rt.up, PromptPrefix+rt.name, PromptPrefix+ref.Name
		p["ref"] = mustJSON(map[string]string{"type": ref.Type, "name": rt.name})
	case "ref/resource":
		if climbs(ref.URI) {
			return nil, climbing("completion/complete")
		}
		up, uri, ok := s.resourceRoute(ref.URI)
		if !ok {
			return nil, &rpcError{Code: codeInvalidParams, Message: "unknown resource: " + ref.URI}
		}
		u, name, policy = up, ResourcePrefix+uri, ResourcePrefix+ref.URI
		p["ref"] = mustJSON(map[string]string{"type": ref.Type, "uri": uri})
	default:
		return nil, &rpcError{Code: codeInvalidParams, Message: "completion/complete: want a ref of type ref/prompt or ref/resource"}
	}
	if u.capability("completions") == nil {
		return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("upstream %s does not offer completions", u.cfg.Name)}
	}
	if !s.visible(ctx, []contract.Tool{{Name: policy, Upstream: u.cfg.Name, UpstreamTool: name}})[policy] {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("[harness] denied: your role may not use %s", policy)}
	}
	delete(p, "_meta")
	result, rerr := s.forward(ctx, u, policy, "completion/complete", mustJSON(p))
	if rerr != nil {
		return nil, rerr
	}
	c, values, ok := completionValues(result)
	if !ok {
		return nil, &rpcError{Code: codeInternal, Message: "[harness] the completions were withheld: not a completion/complete result (completion.values, a list of strings)"}
	}
	parts := make([]govern.Part, len(values))
	for i, v := range values {
		parts[i] = govern.Part{Text: v}
	}
	st, err := s.g.o.Governor.Settle(ctx, govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: policy, Parts: parts})
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: "[harness] the completions were withheld: they could not be charged: " + err.Error()}
	}
	// What goes back is made of what was read and charged alone: the
	// values, and total and hasMore when they are a number and a
	// boolean. Nothing else of the upstream's result is passed on (a
	// member the charge left out, a key given twice whose first value a
	// client might read).
	kept := []string{}
	for i, k := range st.Parts {
		if !k.Cut && !k.Dropped {
			kept = append(kept, values[i])
		}
	}
	completion := map[string]json.RawMessage{"values": mustJSON(kept)}
	if st.Withheld > 0 {
		completion["hasMore"] = json.RawMessage("true")
	} else {
		if t := bytes.TrimSpace(c["total"]); len(t) > 0 && isNumber(t) {
			completion["total"] = t
		}
		if h := string(bytes.TrimSpace(c["hasMore"])); h == "true" || h == "false" {
			completion["hasMore"] = json.RawMessage(h)
		}
	}
	return mustJSON(map[string]any{"completion": completion}), nil
}

// isNumber reports whether raw, valid JSON, is a number.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// completionValues reads a completion/complete result's completion and
// its values by their keys as they are spelled, as a client reads them
// (encoding/json would match "Values" too, the last of the two winning);
// ok is false when the values are not a list of strings.
func completionValues(result json.RawMessage) (c map[string]json.RawMessage, values []string, ok bool) {
	r, err := objectMembers(result)
	if err != nil || r == nil {
		return nil, nil, false
	}
	c, err = objectMembers(r["completion"])
	if err != nil || c == nil {
		return nil, nil, false
	}
	list, err := arrayElements(c["values"])
	if err != nil || list == nil {
		return nil, nil, false
	}
	values = make([]string, len(list))
	for i, v := range list {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '"' {
			return nil, nil, false
		}
		values[i] = stringValue(v)
	}
	return c, values, true
}

// chargeSampling charges the session for an upstream's sampling request
// its agent's client answered: the cost of the messages its model read
// and of what it wrote, at the configured model's prices (or the one the
// answer names, when it is priced and no cheaper: the answer is the
// agent's client's word, and the agent's). The answer is not charged to the
// context: it goes to the upstream, not into the agent's context (the
// request was, as it went: see chargeAsked).
func (s *session) chargeSampling(ctx context.Context, params, result json.RawMessage) {
	var answer struct {
		Model string `json:"model"`
	}
	json.Unmarshal(result, &answer)
	res := govern.Result{Session: s.id.key(), Role: s.id.StartRole, Tool: "sampling/createMessage", Arguments: string(params), Output: string(result), CostOnly: true,
		ModelClaimed: true}
	res.Model = answer.Model
	if _, err := s.g.o.Governor.Record(context.WithoutCancel(ctx), res); err != nil {
		res.Model = "" // a model the price table does not know: the default's prices
		if _, err := s.g.o.Governor.Record(context.WithoutCancel(ctx), res); err != nil {
			s.g.o.Logf("charging a sampling request: %v", err)
		}
	}
}

// mayCost reports why the session may not spend on an upstream's sampling
// request ("" when it may): its tokens or cost budget is exhausted.
func (s *session) mayCost(ctx context.Context) string {
	st, err := s.g.o.Governor.Status(ctx, s.id.key(), s.id.StartRole)
	if err != nil {
		return "the harness could not read the session's budget: " + err.Error()
	}
	if st.Budget.Tokens.Level == "EXHAUSTED" || st.Budget.Cost.Level == "EXHAUSTED" {
		return "the session's budget is exhausted: " + st.StatusLine()
	}
	if a := st.AgentBudget; a != nil && a.Signal == "EXHAUSTED" {
		return "the agent's budget is exhausted: " + st.StatusLine()
	}
	return ""
}

// maxNotificationMethod bounds the method of a notification passed on:
// MCP's are a few dozen bytes.
const maxNotificationMethod = 128

// mcpNotifications are the notifications MCP has a server send, whose
// methods are the protocol's words, not the upstream's: the method of any
// other is charged as text.
var mcpNotifications = map[string]bool{
	"notifications/message": true, "notifications/progress": true, "notifications/cancelled": true,
	"notifications/resources/updated": true, "notifications/resources/list_changed": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true,
	"notifications/elicitation/complete": true, "notifications/tasks/status": true,
}

// chargeNotification charges what an upstream's notification brings the
// agent and returns it as it may reach the agent: whole, cut, or not at
// all (nil). Everything its params hold is charged as text: a log
// message's data and a progress message's message by their text (cut to
// what the budget leaves, as before), every other member as its key and
// its JSON, first; a notification whose other members the budget cannot
// take whole is not passed on, nor is one whose params are there and not
// an object, nor one whose method is longer than any MCP's (which would
// carry text into the agent's context uncharged).
func (s *session) chargeNotification(method string, params json.RawMessage) json.RawMessage {
	if len(method) > maxNotificationMethod {
		s.g.o.Logf("a notification from an upstream whose method is %d bytes long: not passed on", len(method))
		return nil
	}
	// The method of a notification that is no MCP notification is words
	// of the upstream's choosing: charged as text, first.
	named := ""
	if !mcpNotifications[method] {
		named = method
	}
	none := len(bytes.TrimSpace(params)) == 0
	if none {
		if named == "" {
			return json.RawMessage{} // no params: nothing to charge
		}
		params = json.RawMessage(`{}`)
	}
	p, n, err := objectMembersN(params)
	if err != nil || p == nil {
		s.g.o.Logf("%s from an upstream whose params are not an object: not passed on", method)
		return nil
	}
	var key string
	switch method {
	case "notifications/message":
		key = "data"
	case "notifications/progress":
		key = "message"
	}
	if n != len(p) {
		// A key given twice: a client may read the first value, the
		// gateway reads the last. The params are charged whole, and
		// passed on whole or not at all.
		key, p = "", map[string]json.RawMessage{"params": params}
	}
	rest, _ := unreadMembers(nil, p, func(k string, _ json.RawMessage) bool { return k == key })
	if named != "" {
		rest = append([]byte(named+"\n"), rest...)
	}
	parts := []govern.Part{{Text: string(rest)}}
	raw, main := p[key]
	if main {
		text := string(raw)
		if isString(raw) {
			text = stringValue(raw)
		}
		parts = append(parts, govern.Part{Text: text})
	}
	st, err := s.g.o.Governor.Settle(context.Background(), govern.Output{Session: s.id.key(), Role: s.id.StartRole, Tool: method, Parts: parts})
	switch {
	case err != nil:
		s.g.o.Logf("charging %s: %v (not passed on)", method, err)
		return nil
	case st.Withheld == 0 && none:
		return json.RawMessage{} // it came without params
	case st.Withheld == 0:
		return params
	case st.Parts[0].Cut || st.Parts[0].Dropped:
		return nil // what the budget cannot take is not passed on in part
	case !main || st.Parts[1].Dropped || st.Parts[1].Text == "":
		return nil
	}
	p[key] = mustJSON(st.Parts[1].Text + " [harness] the rest withheld: the session's budget is spent")
	return mustJSON(p)
}
