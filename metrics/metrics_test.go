package metrics

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	harnessrego "github.com/agentharness/harness/rego"
)

// scrape reads h's /metrics as Prometheus does, parsed by its text-format
// parser.
func scrape(t *testing.T, h http.Handler, header ...string) map[string]*dto.MetricFamily {
	t.Helper()
	req := httptest.NewRequest("GET", "http://127.0.0.1/metrics", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the series of family with exactly labels (name,
// value pairs), 0 when there is none.
func value(fams map[string]*dto.MetricFamily, family string, labels ...string) float64 {
	f := fams[family]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels)/2 {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// labelValues are the values family's series take for label.
func labelValues(fams map[string]*dto.MetricFamily, family, label string) []string {
	var out []string
	for _, m := range fams[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

// Each label takes a known name, or a closed set's value, or other: a
// name nobody configured never becomes a series.
func TestLabels(t *testing.T) {
	t.Parallel()
	m := New("test")
	m.KnowTools("ctx_read", "ctx_shell", "resource:file:///known")
	m.KnowRoles("coder", "reviewer")
	m.KnowProjectRoles("project-role")
	m.KnowAgents("claude-code")
	tests := []struct {
		name  string
		d     contract.Decision
		err   error
		label []string // outcome, reason, policy, role, tool
	}{
		{"allowed", contract.Decision{Decision: contract.Allow, Role: "coder", Tool: "ctx_read"}, nil,
			[]string{"allow", "none", "", "coder", "ctx_read"}},
		{"unknown tool", contract.Decision{Decision: contract.Deny, Role: "coder", Tool: "evil_tool_1",
			Reasons: []contract.Reason{{Code: contract.CodeToolNotAllowed}}}, nil,
			[]string{"deny", "tool_not_allowed", "", "coder", "other"}},
		{"resource", contract.Decision{Decision: contract.Allow, Role: "coder", Tool: "resource:file:///etc/passwd"}, nil,
			[]string{"allow", "none", "", "coder", "resource:*"}},
		{"listed resource", contract.Decision{Decision: contract.Allow, Role: "coder", Tool: "resource:file:///known"}, nil,
			[]string{"allow", "none", "", "coder", "resource:file:///known"}},
		{"unknown role", contract.Decision{Decision: contract.Allow, Role: "made-up", Tool: "ctx_read"}, nil,
			[]string{"allow", "none", "", "other", "ctx_read"}},
		{"project role", contract.Decision{Decision: contract.Allow, Role: "project-role", Tool: "ctx_read"}, nil,
			[]string{"allow", "none", "", "project-role", "ctx_read"}},
		{"warning", contract.Decision{Decision: contract.Warn, Role: "reviewer", Tool: "ctx_shell",
			Warnings: []contract.Reason{{Code: contract.CodeBudgetWarning}}}, nil,
			[]string{"warn", "budget_warning", "", "reviewer", "ctx_shell"}},
		{"custom policy", contract.Decision{Decision: contract.Deny, Role: "coder", Tool: "ctx_shell",
			Reasons: []contract.Reason{{Code: contract.CodePolicy, Policy: "harness.custom.no_push"}}}, nil,
			[]string{"deny", "policy", "harness.custom.no_push", "coder", "ctx_shell"}},
		{"ask", contract.Decision{Decision: contract.Ask, Role: "coder", Tool: "ctx_shell",
			Reasons: []contract.Reason{{Code: contract.CodeApprovalRequired}}}, nil,
			[]string{"ask", "approval_required", "", "coder", "ctx_shell"}},
		{"unknown reason code", contract.Decision{Decision: contract.Deny, Role: "coder", Tool: "ctx_read",
			Reasons: []contract.Reason{{Code: "made_up_code"}}}, nil,
			[]string{"deny", "other", "", "coder", "ctx_read"}},
		{"unknown outcome", contract.Decision{Decision: "maybe", Role: "coder", Tool: "ctx_read"}, nil,
			[]string{"other", "none", "", "coder", "ctx_read"}},
		{"not decided", contract.Decision{}, errors.New("ledger down"),
			[]string{"error", "none", "", "none", "none"}},
	}
	for _, tt := range tests {
		m.Decided(tt.d, time.Millisecond, tt.err)
	}
	fams := scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	for _, tt := range tests {
		l := tt.label
		if got := value(fams, "harness_decisions_total", "outcome", l[0], "reason", l[1], "policy", l[2], "role", l[3], "tool", l[4]); got != 1 {
			t.Errorf("%s: harness_decisions_total%v = %v, want 1", tt.name, l, got)
		}
	}
	if got := value(fams, "harness_decision_duration_seconds", "outcome", "allow"); got != 5 {
		t.Errorf("decision durations of allow: %v, want 5", got)
	}
	for _, tool := range labelValues(fams, "harness_decisions_total", "tool") {
		if strings.Contains(tool, "evil") || strings.Contains(tool, "passwd") {
			t.Errorf("tool label %q", tool)
		}
	}

	m.Charged("claude-code", "coder", contract.Usage{Tokens: 100, CostMicros: 1_500_000})
	m.Charged("someone-else", "coder", contract.Usage{Tokens: 7})
	m.Charged("claude-code", "coder", contract.Usage{Shell: 1})
	m.Charged("claude-code", "coder", contract.Usage{Shell: -1})
	fams = scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"harness_charged_tokens_total", []string{"role", "coder", "agent", "claude-code"}, 100},
		{"harness_charged_tokens_total", []string{"role", "coder", "agent", "other"}, 7},
		{"harness_charged_cost_dollars_total", []string{"role", "coder", "agent", "claude-code"}, 1.5},
		{"harness_shell_calls_total", []string{"role", "coder", "agent", "claude-code"}, 1},
		{"harness_shell_calls_released_total", []string{"role", "coder", "agent", "claude-code"}, 1},
	} {
		if got := value(fams, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
}

// However many names a project's files add, each label's values stay
// within their bound, and so do the decisions' series.
func TestBounds(t *testing.T) {
	t.Parallel()
	m := New("test")
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	m.KnowProjectRoles(names("role", MaxProjectRoles+50)...)
	m.KnowTools(names("tool", MaxTools+50)...)
	m.KnowTools(strings.Repeat("x", 300))
	for _, tc := range []struct {
		role, want string
	}{{"role0", "role0"}, {fmt.Sprint("role", MaxProjectRoles-1), fmt.Sprint("role", MaxProjectRoles-1)}, {fmt.Sprint("role", MaxProjectRoles), Other}} {
		if got := m.role(tc.role); got != tc.want {
			t.Errorf("role %s: label %s, want %s", tc.role, got, tc.want)
		}
	}
	if got := m.tools.toolLabel(fmt.Sprint("tool", MaxTools+10)); got != Other {
		t.Errorf("tool past the bound: %s", got)
	}
	if got := m.tools.toolLabel(strings.Repeat("x", 300)); got != Other {
		t.Errorf("a long tool name: %s", got)
	}
	for i := range MaxPolicies + 10 {
		m.Decided(contract.Decision{Decision: contract.Deny, Role: "role0", Tool: "tool0",
			Reasons: []contract.Reason{{Code: contract.CodePolicy, Policy: fmt.Sprint("harness.custom.p", i)}}}, 0, nil)
	}
	for _, tool := range names("tool", MaxTools) {
		for _, role := range names("role", MaxProjectRoles) {
			m.Decided(contract.Decision{Decision: contract.Allow, Role: role, Tool: tool}, 0, nil)
		}
	}
	fams := scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	if n := len(labelValues(fams, "harness_decisions_total", "policy")); n > MaxPolicies+2 { // "" and other
		t.Errorf("%d policy labels", n)
	}
	series := len(fams["harness_decisions_total"].GetMetric())
	if series > MaxDecisionSeries+len(Outcomes)*(len(Reasons)+2)*2 {
		t.Errorf("%d series of harness_decisions_total", series)
	}
	total := 0.0
	for _, s := range fams["harness_decisions_total"].GetMetric() {
		total += s.GetCounter().GetValue()
	}
	if want := float64(MaxPolicies + 10 + MaxTools*MaxProjectRoles); total != want {
		t.Errorf("decisions counted: %v, want %v (folded series must still count)", total, want)
	}
	if got := value(fams, "harness_decisions_total", "outcome", "allow", "reason", "none", "policy", "", "role", "other", "tool", "other"); got == 0 {
		t.Error("no decision was folded into other past the bound")
	}
}

// The closed sets are the harness's own: every reason code of its policy,
// every ledger operation, every event type.
func TestClosedSets(t *testing.T) {
	t.Parallel()
	if !slices.Equal(ledgerOps, budget.Ops) {
		t.Errorf("ledger operations %v, budget.Ops %v", ledgerOps, budget.Ops)
	}
	code := regexp.MustCompile(`"code": *"([a-z_]+)"|_reason\("([a-z_]+)"`)
	n := 0
	for _, f := range harnessrego.Policy() {
		if f.Name != "harness.rego" {
			continue // switch.rego decides role switches, not calls
		}
		for _, sub := range code.FindAllStringSubmatch(string(f.Source), -1) {
			c := sub[1] + sub[2]
			n++
			if !slices.Contains(Reasons, c) {
				t.Errorf("%s: reason code %q is not in Reasons", f.Name, c)
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d reason codes in the policy: the pattern is stale", n)
	}
	if len(eventTypes) != len(events.Types) {
		t.Errorf("event types %v", eventTypes)
	}
}

// Events count by type, and budget crossings by level, dimension, scope,
// role and agent.
func TestEvents(t *testing.T) {
	t.Parallel()
	m := New("test")
	m.KnowRoles("coder")
	m.KnowAgents("a")
	pct := int64(80)
	for _, e := range []events.Event{
		{Type: events.BudgetWarning, Agent: "a", Role: "coder", Budget: &events.Budget{Dimension: "tokens", Percent: &pct}},
		{Type: events.BudgetExhausted, Agent: "a", Role: "coder", Budget: &events.Budget{Dimension: "cost", Scope: events.ScopeAgent}},
		{Type: events.BudgetExhausted, Agent: "b", Role: "coder", Budget: &events.Budget{Dimension: "made-up"}},
		{Type: events.PolicyViolation, Agent: "a", Role: "coder", Violation: &events.Violation{Tool: "x"}},
		{Type: "Invented"},
	} {
		if err := m.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"harness_budget_crossings_total", []string{"level", "warning", "dimension", "tokens", "scope", "session", "role", "coder", "agent", "a"}, 1},
		{"harness_budget_crossings_total", []string{"level", "exhausted", "dimension", "cost", "scope", "agent", "role", "coder", "agent", "a"}, 1},
		{"harness_budget_crossings_total", []string{"level", "exhausted", "dimension", "other", "scope", "session", "role", "coder", "agent", "other"}, 1},
		{"harness_events_total", []string{"type", "BudgetExhausted"}, 2},
		{"harness_events_total", []string{"type", "PolicyViolation"}, 1},
		{"harness_events_total", []string{"type", "RoleChanged"}, 0},
		{"harness_events_total", []string{"type", "other"}, 1},
	} {
		if got := value(fams, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if _, ok := fams["harness_events_total"]; !ok {
		t.Error("no harness_events_total")
	}
}

// The series an operator alerts on exist at zero from the start, and every
// family follows Prometheus's naming: harness_ prefix, counters in _total,
// units as suffixes.
func TestNames(t *testing.T) {
	t.Parallel()
	m := New("v1.2.3")
	fams := scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	for _, c := range []struct {
		family string
		labels []string
	}{
		{"harness_ledger_errors_total", []string{"op", "charge"}},
		{"harness_policy_reloads_total", []string{"result", "failed"}},
		{"harness_events_total", []string{"type", "BudgetWarning"}},
	} {
		found := false
		for _, s := range fams[c.family].GetMetric() {
			if len(s.GetLabel()) == 1 && s.GetLabel()[0].GetValue() == c.labels[1] {
				found = true
			}
		}
		if !found {
			t.Errorf("%s%v does not exist at the start", c.family, c.labels)
		}
	}
	if got := value(fams, "harness_build_info", "version", "v1.2.3"); got != 1 {
		t.Errorf("harness_build_info = %v", got)
	}
	if got := value(fams, "harness_live_sessions"); got != 0 {
		t.Errorf("live sessions without a gateway: %v", got)
	}
	m.SetSessions(func() int { return 3 })
	if got := value(scrape(t, m.Handler(HandlerOptions{Loopback: true})), "harness_live_sessions"); got != 3 {
		t.Errorf("live sessions: %v, want 3", got)
	}
	unit := regexp.MustCompile(`_(total|seconds|dollars_total|info|sessions)$`)
	for _, name := range m.Names() {
		if !strings.HasPrefix(name, "harness_") || !unit.MatchString(name) {
			t.Errorf("metric %s: want harness_…_<unit>", name)
		}
		if _, ok := fams[name]; !ok && !strings.HasSuffix(name, "_seconds") && !strings.Contains(name, "alert") {
			// Vectors without series yet are absent from a scrape;
			// these ones are made at the start.
			switch name {
			case "harness_ledger_errors_total", "harness_policy_reloads_total", "harness_events_total", "harness_build_info", "harness_live_sessions":
				t.Errorf("%s missing from the scrape", name)
			}
		}
	}
}

// Every method is a no-op on a nil *Metrics.
func TestNil(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.KnowTools("x")
	m.KnowRoles("x")
	m.KnowProjectRoles("x")
	m.KnowAgents("x")
	m.KnowUpstreams("x")
	m.SetSessions(func() int { return 1 })
	m.Decided(contract.Decision{Decision: contract.Allow}, 0, nil)
	m.Charged("a", "r", contract.Usage{Tokens: 1})
	m.Emit(events.Event{Type: events.BudgetWarning})
	m.LedgerOp("get", 0, nil)
	m.UpstreamCall("u", "tools/call", 0, ResultOK)
	m.UpstreamRestart("u", nil)
	m.ToolsListed([]string{"x"})
	m.Reloaded(nil)
	m.AlertDelivered("a")
	m.AlertFailed("a")
	m.AlertDropped("a", DropGaveUp, 1)
}

// The ledger's operations, the upstreams' calls and restarts, the reloads
// and the alerts count under their labels.
func TestOperations(t *testing.T) {
	t.Parallel()
	m := New("test")
	m.KnowUpstreams("fs")
	m.LedgerOp(budget.OpCharge, time.Millisecond, nil)
	m.LedgerOp(budget.OpCharge, time.Millisecond, errors.New("down"))
	m.LedgerOp("made_up", time.Millisecond, nil)
	m.UpstreamCall("fs", "tools/call", time.Millisecond, ResultOK)
	m.UpstreamCall("fs", "tools/call", time.Millisecond, ResultFailed)
	m.UpstreamCall("unknown", "weird/method", time.Millisecond, "odd")
	m.UpstreamRestart("fs", nil)
	m.UpstreamRestart("fs", errors.New("exit 1"))
	m.Reloaded(errors.New("bad role"))
	m.AlertDelivered("ops")
	m.AlertFailed("ops")
	m.AlertDropped("ops", DropQueueFull, 3)
	m.AlertDropped("ops", DropQueueFull, 0)
	fams := scrape(t, m.Handler(HandlerOptions{Loopback: true}))
	for _, c := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"harness_ledger_operation_duration_seconds", []string{"op", "charge"}, 2},
		{"harness_ledger_operation_duration_seconds", []string{"op", "other"}, 1},
		{"harness_ledger_errors_total", []string{"op", "charge"}, 1},
		{"harness_ledger_errors_total", []string{"op", "get"}, 0},
		{"harness_upstream_request_duration_seconds", []string{"upstream", "fs", "method", "tools/call"}, 2},
		{"harness_upstream_requests_total", []string{"upstream", "fs", "method", "tools/call", "result", "ok"}, 1},
		{"harness_upstream_requests_total", []string{"upstream", "fs", "method", "tools/call", "result", "failed"}, 1},
		{"harness_upstream_requests_total", []string{"upstream", "other", "method", "other", "result", "other"}, 1},
		{"harness_upstream_restarts_total", []string{"upstream", "fs", "result", "ok"}, 1},
		{"harness_upstream_restarts_total", []string{"upstream", "fs", "result", "failed"}, 1},
		{"harness_policy_reloads_total", []string{"result", "failed"}, 1},
		{"harness_alerts_delivered_total", []string{"alert", "ops"}, 1},
		{"harness_alert_failures_total", []string{"alert", "ops"}, 1},
		{"harness_alerts_dropped_total", []string{"alert", "ops", "reason", "queue_full"}, 3},
	} {
		if got := value(fams, c.family, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
}

// Who may read what: /metrics is open on loopback without a token, wants
// the token when there is one, and is refused off loopback without one;
// /healthz and /readyz are always open, and say why they are not ready
// only to a caller /metrics admits; a loopback listener refuses a Host
// that is not loopback (DNS rebinding).
func TestHandlerAccess(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-metrics"
	notReady := func(context.Context) error { return errors.New("the ledger does not answer: secret-detail") }
	tests := []struct {
		name     string
		o        HandlerOptions
		path     string
		host     string
		auth     string
		want     int
		contains string
		absent   string
	}{
		{"loopback, no token", HandlerOptions{Loopback: true}, "/metrics", "127.0.0.1:9464", "", 200, "harness_build_info", ""},
		{"loopback, localhost", HandlerOptions{Loopback: true}, "/metrics", "localhost", "", 200, "harness_build_info", ""},
		{"loopback, ipv6", HandlerOptions{Loopback: true}, "/metrics", "[::1]:9464", "", 200, "harness_build_info", ""},
		{"loopback, rebinding host", HandlerOptions{Loopback: true}, "/metrics", "evil.example:9464", "", 403, "not this machine's loopback", ""},
		{"loopback, rebinding host on healthz", HandlerOptions{Loopback: true}, "/healthz", "evil.example", "", 403, "", ""},
		{"remote, no token configured", HandlerOptions{}, "/metrics", "harness.example", "", 403, "needs a token", "harness_"},
		{"remote, an agent's token", HandlerOptions{}, "/metrics", "harness.example", "Bearer agent-token-0123456789", 403, "", "harness_"},
		{"token, none given", HandlerOptions{Token: token}, "/metrics", "harness.example", "", 401, "bearer token", "harness_"},
		{"token, wrong", HandlerOptions{Token: token}, "/metrics", "harness.example", "Bearer " + token + "x", 401, "", "harness_"},
		{"token, not bearer", HandlerOptions{Token: token}, "/metrics", "harness.example", "Basic " + token, 401, "", "harness_"},
		{"token, right", HandlerOptions{Token: token}, "/metrics", "harness.example", "Bearer " + token, 200, "harness_build_info", ""},
		{"token on loopback wants it too", HandlerOptions{Token: token, Loopback: true}, "/metrics", "127.0.0.1", "", 401, "", "harness_"},
		{"token digest, none given", HandlerOptions{TokenSHA256: strings.Repeat("ab", 32)}, "/metrics", "h", "", 401, "", ""},
		{"healthz, remote, no token", HandlerOptions{}, "/healthz", "harness.example", "", 200, "ok", ""},
		{"readyz, ready", HandlerOptions{}, "/readyz", "harness.example", "", 200, "ready", ""},
		{"readyz, not ready, unauthenticated", HandlerOptions{Token: token, Ready: notReady}, "/readyz", "harness.example", "", 503, "not ready", "secret-detail"},
		{"readyz, not ready, authenticated", HandlerOptions{Token: token, Ready: notReady}, "/readyz", "harness.example", "Bearer " + token, 503, "secret-detail", ""},
		{"not a path", HandlerOptions{Loopback: true}, "/", "127.0.0.1", "", 404, "", ""},
	}
	m := New("test")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("GET", tt.path, nil)
			req.Host = tt.host
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			m.Handler(tt.o).ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tt.want || !strings.Contains(body, tt.contains) || (tt.absent != "" && strings.Contains(body, tt.absent)) {
				t.Errorf("GET %s: %d %q, want %d with %q and without %q", tt.path, rec.Code, body, tt.want, tt.contains, tt.absent)
			}
			if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// A token given as its SHA-256 opens /metrics with the token itself.
func TestTokenDigest(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef-metrics"
	digest := "b7f2e7d0b5bd0ac2d3e15b4d5b9a1e3ad0a1cf3b1d97c5c18b86d0bdd0d7e1b0"
	h := New("test").Handler(HandlerOptions{TokenSHA256: sha256hex(token)})
	if got := value(scrape(t, h, "Authorization", "Bearer "+token), "harness_build_info", "version", "test"); got != 1 {
		t.Errorf("harness_build_info with the digest's token: %v", got)
	}
	h = New("test").Handler(HandlerOptions{TokenSHA256: strings.ToUpper(sha256hex(token))})
	if got := value(scrape(t, h, "Authorization", "Bearer "+token), "harness_build_info", "version", "test"); got != 1 {
		t.Errorf("an upper-case digest: %v", got)
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	New("test").Handler(HandlerOptions{TokenSHA256: digest}).ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("another digest: %d", rec.Code)
	}
}

// A readiness check that does not answer is "not ready" at the timeout:
// /readyz answers at once whatever the ledger does.
func TestReadyTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stuck := func(ctx context.Context) error {
		<-release // ignores ctx: a ledger that hangs
		return nil
	}
	h := New("test").Handler(HandlerOptions{Loopback: true, Ready: stuck, ReadyTimeout: 10 * time.Millisecond})
	req := httptest.NewRequest("GET", "http://127.0.0.1/readyz", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "no answer within") {
		t.Errorf("readyz: %d %q", rec.Code, rec.Body)
	}
}

// A metrics listener stays on loopback unless allowed off it, and then
// wants a token and TLS.
func TestCheckAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr              string
		allow, token, tls bool
		want              string // "" for accepted
	}{
		{"127.0.0.1:9464", false, false, false, ""},
		{"[::1]:9464", false, false, false, ""},
		{"localhost:0", false, false, false, ""},
		{"9464", false, false, false, "want host:port"},
		{"0.0.0.0:9464", false, true, true, "not a loopback address"},
		{":9464", false, true, true, "not a loopback address"},
		{"192.0.2.1:9464", true, false, true, "needs a token"},
		{"192.0.2.1:9464", true, true, false, "needs TLS"},
		{"192.0.2.1:9464", true, true, true, ""},
	}
	for _, tt := range tests {
		err := CheckAddr(tt.addr, tt.allow, tt.token, tt.tls)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckAddr(%q, %v, %v, %v) = %v, want %q", tt.addr, tt.allow, tt.token, tt.tls, err, tt.want)
		}
	}
}

// Listen serves the handler on a real socket until Close, and refuses an
// address CheckAddr refuses.
func TestListen(t *testing.T) {
	t.Parallel()
	m := New("test")
	if _, err := m.Listen(ListenOptions{Addr: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Errorf("listened off loopback: %v", err)
	}
	if _, err := m.Listen(ListenOptions{Addr: "127.0.0.1:0", TLSCert: "c.pem"}); err == nil {
		t.Error("listened with a certificate and no key")
	}
	srv, err := m.Listen(ListenOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, path := range Paths {
		resp, err := http.Get("http://" + srv.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("GET %s: %d %q", path, resp.StatusCode, b)
		}
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
