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
