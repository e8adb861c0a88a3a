package govern

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
)

// recorder is a Sink that keeps events.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorder) Emit(e events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) of(t events.Type) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// switchGovernor has the built-ins, a project role "anything" that allows
// every tool, and a tight role whose token limit is 1000.
func switchGovernor(t *testing.T) (*Governor, *recorder, budget.Store, string) {
	t.Helper()
	set := testroles.Set(t, map[string]string{
		"anything": "[tools]\nallowed = [\"*\"]\n[limits]\nmax_cost_usd = 1000.0\n",
		"tight":    "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 1000\n",
	})
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	dl, err := events.OpenDecisionLog(logPath, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dl.Close() })
	rec := &recorder{}
	s := budget.NewMemory()
	return New(Options{Rules: Rules{Engine: e}, Store: s, Sinks: []events.Sink{rec}, Decisions: dl}), rec, s, logPath
}

func TestSwitchKeepsUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, rec, s, _ := switchGovernor(t)
	k := budget.Key{Agent: "a", Session: "s"}
	if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: "hello world"}); err != nil {
		t.Fatal(err)
	}
	s.AddShell(ctx, k, "")
	for _, to := range []string{"reviewer", "coder"} {
		o, err := g.Switch(ctx, k, to, contract.ByAgent)
		if err != nil || !o.Switched || o.Counters.Role != to || o.Counters.Tokens != 2 || o.Counters.Shell != 1 {
			t.Fatalf("switch to %s: %+v, %v", to, o, err)
		}
	}
	changes := rec.of(events.RoleChanged)
	if len(changes) != 2 || changes[0].From != "coder" || changes[0].To != "reviewer" || changes[1].From != "reviewer" || changes[1].By != "agent" {
		t.Errorf("RoleChanged events: %+v", changes)
	}
	if o, _ := g.Switch(ctx, k, "coder", contract.ByAgent); o.Switched || !o.Decision.Allowed {
		t.Errorf("a switch to the role in force: %+v", o)
	}
}

func TestAgentCannotEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, rec, s, logPath := switchGovernor(t)
	k := budget.Key{Agent: "a", Session: "s"}
	// In this order: the first violation is a privileged role's.
	for _, sw := range []struct{ to, rule string }{{"admin", "privileged"}, {"ops", "privileged"}, {"anything", "ceiling"}} {
		o, err := g.Switch(ctx, k, sw.to, contract.ByAgent)
		if err != nil || o.Switched || o.Decision.Allowed || o.Decision.Reasons[0].Rule != sw.rule {
			t.Errorf("agent switch to %s: %+v, %v", sw.to, o, err)
		}
	}
	if c, _ := s.Get(ctx, k, ""); c.Role != "coder" {
		t.Errorf("role after refused switches: %s", c.Role)
	}
	v := rec.of(events.PolicyViolation)
	if len(v) != 3 || v[0].Reasons[0].Code != contract.CodeSwitchDenied || !strings.Contains(v[0].Reason, "an agent may not switch itself into it") {
		t.Errorf("violations: %+v", v)
	}
	// The operator may, and it is logged as the operator's.
	o, err := g.Switch(ctx, k, "admin", contract.ByOperator)
	if err != nil || !o.Switched {
		t.Fatalf("operator switch: %+v, %v", o, err)
	}
	if ch := rec.of(events.RoleChanged); len(ch) != 1 || ch[0].By != "operator" || ch[0].To != "admin" {
		t.Errorf("RoleChanged: %+v", ch)
	}
	n := 0
	events.ReadLines(logPath, 0, func(line []byte) error {
		if strings.Contains(string(line), `"path":"harness/switch"`) {
			n++
		}
		return nil
	})
	if n != 4 {
		t.Errorf("%d switch entries in the decision log, want 4 (3 refused, 1 made)", n)
	}
}

func TestSwitchIntoATighterRoleReportsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, rec, _, _ := switchGovernor(t)
	k := budget.Key{Session: "s"}
	if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: strings.Repeat("hello world ", 600)}); err != nil { // 1201 tokens
		t.Fatal(err)
	}
	if _, err := g.Switch(ctx, k, "tight", contract.ByAgent); err != nil {
		t.Fatal(err)
	}
	st, _ := g.Status(ctx, k, "")
	if st.Signal != contract.LevelExhausted || !strings.HasPrefix(st.StatusLine(), "Budget[tight]: tokens 1201/1000 (120%)") {
		t.Errorf("status after the switch: %s", st.StatusLine())
	}
	var got []string
	for _, e := range rec.events {
		if e.Budget != nil {
			got = append(got, string(e.Type)+"/"+e.Dimension)
		}
	}
	if strings.Join(got, " ") != "BudgetWarning/tokens BudgetExhausted/tokens" {
		t.Errorf("budget events of the switch: %v", got)
	}
}

func TestSessionsHoldTheirOwnRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, _, _, _ := switchGovernor(t)
	a, b := budget.Key{Session: "a"}, budget.Key{Session: "b"}
	g.Switch(ctx, a, "reviewer", contract.ByAgent)
	g.Switch(ctx, b, "debugger", contract.ByAgent)
	da, _ := g.Decide(ctx, Call{Session: a, Tool: "ctx_edit"})
	db, _ := g.Decide(ctx, Call{Session: b, Tool: "ctx_edit"})
	if da.Decision.Role != "reviewer" || da.Allowed || db.Decision.Role != "debugger" || !db.Allowed {
		t.Errorf("a: %s %v; b: %s %v", da.Decision.Role, da.Allowed, db.Decision.Role, db.Allowed)
	}
}

// Concurrent switches of one session form one chain: each made switch
// starts from the role the previous one left.
func TestConcurrentSwitchesChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, rec, s, _ := switchGovernor(t)
	k := budget.Key{Session: "s"}
	g.Session(ctx, k, "")
	var wg sync.WaitGroup
	for i := range 30 {
		to := []string{"reviewer", "debugger", "coder"}[i%3]
		wg.Go(func() { g.Switch(ctx, k, to, contract.ByAgent) })
	}
	wg.Wait()
	// Whatever order the events were delivered in, the switches made form
	// one chain: the roles they left are the starting role and every role a
	// switch entered, but the last.
	c, _ := s.Get(ctx, k, "")
	froms := map[string]int{"coder": 1}
	for _, e := range rec.of(events.RoleChanged) {
		froms[e.From]--
		froms[e.To]++
	}
	froms[c.Role]--
	for role, n := range froms {
		if n != 0 {
			t.Errorf("switches do not chain: role %s left %d times more than entered (%v)", role, -n, froms)
		}
	}
}

// An agent with a max_role switches down and back up to it, never past it;
// another agent is not bound by it, nor is the operator.
func TestAgentStaysWithinItsMaxRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := testroles.Set(t, map[string]string{})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	g := New(Options{Rules: Rules{Engine: e, AgentMaxRoles: map[string]string{"capped": "reviewer"}}, Store: budget.NewMemory()})
	capped, free := budget.Key{Agent: "capped", Session: "s"}, budget.Key{Agent: "free", Session: "s"}
	for _, step := range []struct {
		k      budget.Key
		to, by string
		want   string // "" for allowed, else the refusing rule
	}{
		{capped, "reviewer", contract.ByOperator, ""},
		{capped, "coder", contract.ByAgent, "ceiling"},
		{capped, "debugger", contract.ByAgent, "ceiling"},
		{capped, "coder", contract.ByOperator, ""}, // the operator may go past it
		{capped, "reviewer", contract.ByAgent, ""},
		{capped, "coder", contract.ByAgent, "ceiling"}, // and the agent cannot come back
		{free, "debugger", contract.ByAgent, ""},
	} {
		o, err := g.Switch(ctx, step.k, step.to, step.by)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if !o.Decision.Allowed {
			got = o.Decision.Reasons[0].Rule
		}
		if got != step.want {
			t.Errorf("%s to %s by %s: refused by %q, want %q (%+v)", step.k.Agent, step.to, step.by, got, step.want, o.Decision)
		}
	}
	if g.MaxRole("capped") != "reviewer" || g.MaxRole("free") != "" {
		t.Errorf("MaxRole: %q %q", g.MaxRole("capped"), g.MaxRole("free"))
	}
}

// TestARoleHeldBeyondTheCeilingIsRefused: an agent holds a project's role
// only within its ceiling, in the roles its calls are decided by, not only
// in those its switch was decided by. The hostile paths: switch into a
// project's narrow role, then rewrite its file wide (a reload); switch
// where a name is narrow, then call where it is wide (the same reload);
// a max_role that the project itself defines. A role the operator starts
// the session in is held to the ceiling too, as the agent can rewrite its
// file as well; an exempt tool stays allowed, so the agent can see its
// role and switch back.
func TestARoleHeldBeyondTheCeilingIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		narrow = "[role]\ninherits = \"reviewer\"\n"
		wide   = "[role]\ninherits = \"admin\"\nprivileged = false\n[limits]\nmax_shell_invocations = 1000000\nmax_cost_usd = 1000.0\n"
	)
	rules := func(helper string, maxRoles map[string]string) Rules {
		set := testroles.Set(t, map[string]string{"helper": helper})
		e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
		if err != nil {
			t.Fatal(err)
		}
		relaxed(e)
		return Rules{Engine: e, Roles: set, AgentMaxRoles: maxRoles}
	}
	for _, tt := range []struct {
		name     string
		maxRoles map[string]string
		start    string // the operator's start role (Call.Role)
		switchTo string // the agent's switch, under the narrow helper
		tool     string
		want     string // the decision under the wide helper
		rule     string // the first reason's rule, for a refusal
	}{
		{"switched into, then widened", nil, "", "helper", "ctx_shell", contract.Deny, "ceiling"},
		{"a read too", nil, "", "helper", "ctx_read", contract.Deny, "ceiling"},
		{"an exempt tool stays allowed", nil, "", "helper", contract.SessionTool, contract.Allow, ""},
		{"the operator's start role", nil, "helper", "", "ctx_shell", contract.Deny, "ceiling"},
		{"a max_role the project defines covers nothing", map[string]string{"a": "helper"}, "", "helper", "ctx_read", contract.Deny, "ceiling"},
		{"a role within the ceiling as it is now", nil, "", "reviewer", "ctx_read", contract.Allow, ""},
		{"a built-in beyond the ceiling, the operator's", nil, "admin", "", "ctx_shell", contract.Allow, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := New(Options{Rules: rules(narrow, tt.maxRoles), Store: budget.NewMemory()})
			k := budget.Key{Agent: "a", Session: "s"}
			if _, err := g.Session(ctx, k, tt.start); err != nil {
				t.Fatal(err)
			}
			if tt.switchTo != "" {
				o, err := g.Switch(ctx, k, tt.switchTo, contract.ByAgent)
				if tt.maxRoles == nil && (err != nil || !o.Decision.Allowed) {
					t.Fatalf("the switch into the narrow role: %+v, %v", o.Decision, err)
				}
				if tt.maxRoles != nil {
					// A project's max_role covers nothing: the switch is
					// refused too; the operator sets the role instead.
					if o.Decision.Allowed {
						t.Fatalf("a switch under a max_role the project defines: %+v", o.Decision)
					}
					if _, err := g.Switch(ctx, k, tt.switchTo, contract.ByOperator); err != nil {
						t.Fatal(err)
					}
				}
			}
			g.Swap(rules(wide, tt.maxRoles)) // the project's file rewritten
			o, err := g.Decide(ctx, Call{Session: k, Tool: tt.tool, Role: tt.start})
			if err != nil {
				t.Fatal(err)
			}
			if o.Decision.Decision != tt.want || o.Allowed != (tt.want == contract.Allow) {
				t.Fatalf("%s: %s (allowed %v), want %s: %+v", tt.tool, o.Decision.Decision, o.Allowed, tt.want, o.Decision.Reasons)
			}
			if tt.rule != "" {
				if r := o.Decision.Reasons[0]; r.Code != contract.CodeSwitchDenied || r.Rule != tt.rule || !strings.Contains(r.Message, "'helper'") {
					t.Errorf("the refusal: %+v", r)
				}
			}
			// What is shown (a listing, and what a listing decides:
			// completions, subscriptions): the exempt tools alone.
			shown, err := g.Visible(ctx, k, tt.start, contract.Named("ctx_read", contract.SessionTool))
			held := tt.rule != "" || tt.tool == contract.SessionTool // the role, not the exempt tool, is beyond
			if err != nil || !shown[contract.SessionTool] || shown["ctx_read"] == held {
				t.Errorf("shown: %v, %v", shown, err)
			}
		})
	}
}
