package govern

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/testredis"
	"github.com/agentharness/harness/internal/testroles"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/pricing"
	"github.com/agentharness/harness/roles"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testredis.Stop()
	os.Exit(code)
}

func engine(t testing.TB) *policy.Engine {
	t.Helper()
	set, err := roles.Load(roles.Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return relaxed(e)
}

// relaxed gives e a deadline far beyond the default: many goroutines
// decide at once on a busy machine, and a decision may wait for a core
// longer than 250 ms, which is not what these tests are about.
// engineOf is an engine (relaxed) of the built-ins and roles, name → TOML.
func engineOf(t testing.TB, roles map[string]string) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), compiler.Compile(testroles.Set(t, roles), compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	return relaxed(e)
}

func relaxed(e *policy.Engine) *policy.Engine {
	e.SetBounds(policy.Bounds{Timeout: time.Minute})
	return e
}

func stores(t testing.TB) map[string]budget.Store {
	t.Helper()
	ctx := context.Background()
	sq, err := budget.OpenSQLite(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := budget.OpenRedis(ctx, testredis.URL(t), budget.Options{Prefix: fmt.Sprintf("govern:%s:%d:", t.Name(), time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]budget.Store{"memory": budget.NewMemory(), "sqlite": sq, "redis": rd}
	t.Cleanup(func() {
		for _, s := range all {
			s.Close()
		}
	})
	return all
}

// 64 goroutines race for the last 5 shell slots of a coder session: exactly
// 5 are allowed, whatever the store.
func TestShellRaceExactlyAdmitted(t *testing.T) {
	t.Parallel()
	e := engine(t)
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := New(Options{Rules: Rules{Engine: e}, Store: s})
			k := budget.Key{Agent: "agent", Session: "race"}
			if _, err := g.Session(ctx, k, "coder"); err != nil {
				t.Fatal(err)
			}
			for range 95 {
				if _, err := s.AddShell(ctx, k, ""); err != nil {
					t.Fatal(err)
				}
			}
			var allowed, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 64 {
				wg.Go(func() {
					<-start
					o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Reserve: true})
					switch {
					case err != nil:
						t.Error(err)
					case o.Allowed && o.Reserved:
						allowed.Add(1)
					case !o.Allowed && !o.Reserved:
						denied.Add(1)
						if c := o.Decision.Reasons[0].Code; c != contract.CodeShellBudget && c != contract.CodeBudgetExhausted {
							t.Errorf("denied for %s", c)
						}
					default:
						t.Errorf("inconsistent outcome %+v", o)
					}
				})
			}
			close(start)
			wg.Wait()
			c, _ := s.Get(ctx, k, "")
			if allowed.Load() != 5 || denied.Load() != 59 || c.Shell != 100 {
				t.Errorf("allowed %d, denied %d, shell count %d; want 5, 59, 100", allowed.Load(), denied.Load(), c.Shell)
			}
		})
	}
}

func TestDeniedCallTakesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: s})
	k := budget.Key{Session: "s"}
	o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Role: "reviewer", Reserve: true})
	if err != nil || o.Allowed || o.Reserved || o.Decision.Reasons[0].Code != contract.CodeToolDenied {
		t.Fatalf("%+v, %v", o, err)
	}
	if c, _ := s.Get(ctx, k, ""); c.Shell != 0 || c.Role != "reviewer" {
		t.Errorf("counters after a denied call: %+v", c)
	}
	// A question without Reserve takes nothing either.
	if o, _ := g.Decide(ctx, Call{Session: budget.Key{Session: "q"}, Tool: "ctx_shell"}); !o.Allowed || o.Reserved {
		t.Errorf("question: %+v", o)
	}
	if o, _ := g.Decide(ctx, Call{Session: k, Tool: "ctx_read", Reserve: true}); o.Reserved {
		t.Error("a non-shell call took a shell slot")
	}
}

func TestSessionKeepsItsRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := New(Options{Rules: Rules{Engine: engine(t), DefaultRole: "debugger"}, Store: budget.NewMemory()})
	k := budget.Key{Session: "s"}
	o, _ := g.Decide(ctx, Call{Session: k, Tool: "ctx_edit", Role: "reviewer"})
	if o.Decision.Role != "reviewer" || o.Allowed {
		t.Fatalf("first call: %+v", o.Decision)
	}
	if o, _ = g.Decide(ctx, Call{Session: k, Tool: "ctx_edit", Role: "coder"}); o.Decision.Role != "reviewer" {
		t.Errorf("a call's role replaced the session's: %s", o.Decision.Role)
	}
	if o, _ = g.Decide(ctx, Call{Session: budget.Key{Session: "new"}, Tool: "ctx_edit"}); o.Decision.Role != "debugger" {
		t.Errorf("default role: %s", o.Decision.Role)
	}
}

func TestRecordAndBudgetCrossings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := budget.NewMemory()
	rec := &recorder{}
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: s, Sinks: []events.Sink{rec}})
	k := budget.Key{Session: "s"}
	ch, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Arguments: `{"path":"main.go"}`, Output: "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	// 2 output tokens at $10/M and the arguments' input tokens at $2.50/M.
	wantCost, _ := pricing.Default().Cost("", ch.InputTokens, 2)
	if ch.OutputTokens != 2 || ch.InputTokens < 3 || ch.CostMicros != wantCost || ch.After.Tokens != 2 || ch.Before.Tokens != 0 {
		t.Errorf("charge %+v (want cost %d)", ch, wantCost)
	}
	// Cross 80% then 100% of the coder's 200000 tokens with real outputs.
	big := strings.Repeat("hello world ", 10000) // 20001 tokens
	var outcomes []string
	for range 12 {
		if _, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: big}); err != nil {
			t.Fatal(err)
		}
		o, _ := g.Decide(ctx, Call{Session: k, Tool: "ctx_read"})
		outcomes = append(outcomes, o.Decision.Decision)
	}
	got := strings.Join(outcomes, " ")
	if got != "allow allow allow allow allow allow allow warn warn deny deny deny" {
		t.Errorf("outcomes while the tokens grow: %s", got)
	}
	// Each threshold crossed once, with the policy's figures.
	warned, exhausted := rec.of(events.BudgetWarning), rec.of(events.BudgetExhausted)
	if len(warned) != 1 || warned[0].Dimension != "tokens" || warned[0].Used != 160010 || *warned[0].Percent != 80 || warned[0].Limit != 200000 {
		t.Errorf("warnings %+v", warned)
	}
	if len(exhausted) != 1 || exhausted[0].Dimension != "tokens" || exhausted[0].Used != 200012 || exhausted[0].Role != "coder" {
		t.Errorf("exhaustions %+v", exhausted)
	}
	st, _ := g.Status(ctx, k, "")
	if st.Signal != contract.LevelExhausted || !strings.HasPrefix(st.StatusLine(), "Budget[coder]: tokens ") {
		t.Errorf("status %s", st.StatusLine())
	}
	if err := g.Reset(ctx, k); err != nil {
		t.Fatal(err)
	}
	if o, _ := g.Decide(ctx, Call{Session: k, Tool: "ctx_read"}); o.Decision.Decision != contract.Allow {
		t.Errorf("after the operator's reset: %+v", o.Decision)
	}
}

func TestShadowMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: s, Shadow: true})
	k := budget.Key{Session: "s"}
	o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Role: "reviewer", Reserve: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.Decision.Decision != contract.Deny || !o.Allowed || !o.Shadowed || !o.Reserved || o.Counters.Shell != 1 {
		t.Errorf("shadow: %+v", o)
	}
}

// What an agent or operator may ask of a session, answered by the policy:
// its budget, the tools it sees, its role and where it may go, why a tool
// is decided as it is.
func TestSessionViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set, err := roles.Load(roles.Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	s := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: engine(t), Roles: set, AgentMaxRoles: map[string]string{"capped": "coder"}}, Store: s})
	k := budget.Key{Agent: "capped", Session: "v"}

	st, err := g.Status(ctx, k, "reviewer")
	if err != nil || st.Role != "reviewer" || st.StatusLine() != "Budget[reviewer]: tokens 0/150000 (0%) | shell 0/0 (0%) | cost $0.00/$3.00 (0%) → OK" {
		t.Errorf("status of a new session: %+v, %v", st, err)
	}
	shown, err := g.Visible(ctx, k, "reviewer", contract.Named("ctx_read", "ctx_edit", "ctx_shell", "ctx_session"))
	if err != nil || len(shown) != 2 || !shown["ctx_read"] || !shown["ctx_session"] {
		t.Errorf("a reviewer sees %v, %v", shown, err)
	}
	info, err := g.RoleInfo(ctx, k, "reviewer")
	if err != nil || info.Role == nil || info.Role.Name != "reviewer" || info.Status != st ||
		!slices.Equal(info.MayEnter(), []string{"coder"}) || !slices.Equal(info.OperatorOnly(), []string{"admin", "debugger", "ops"}) {
		t.Errorf("role info: %+v (may enter %v, operator only %v), %v", info, info.MayEnter(), info.OperatorOnly(), err)
	}
	x, err := g.Explain(ctx, k, "reviewer", "ctx_edit", nil)
	if err != nil || x.Decision.Decision != contract.Deny || !slices.Equal(x.DeniedBy, []string{"ctx_edit"}) || x.Role.Name != "reviewer" {
		t.Errorf("explanation: %+v, %v", x, err)
	}

	// A session whose role is gone: its status says so, with the roles
	// there are.
	gone := budget.Key{Session: "gone"}
	if _, err := s.SetRole(ctx, gone, "retired"); err != nil {
		t.Fatal(err)
	}
	var unknown *UnknownRoleError
	if _, err := g.Status(ctx, gone, ""); !errors.As(err, &unknown) || unknown.Role != "retired" || !slices.Contains(unknown.Known, "coder") {
		t.Errorf("status of a session whose role is gone: %v", err)
	}
	if _, err := g.RoleInfo(ctx, gone, ""); !errors.As(err, &unknown) {
		t.Errorf("role info of a session whose role is gone: %v", err)
	}
	if shown, _ := g.Visible(ctx, gone, "", contract.Named("ctx_read", "ctx_session")); len(shown) != 0 {
		t.Errorf("a role that is gone sees %v", shown)
	}
}

// What a session may ask (its budget, role, visible tools, explanations)
// and the listings of sessions read the ledger and never write it: a new
// session is shown in its starting role and not created, an existing one
// as it is. On a read-only store any write would be an error.
func TestViewsWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := budget.Open(ctx, "memory:", budget.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	g := New(Options{Rules: Rules{Engine: engine(t), AgentRoles: map[string]string{"claude-code": "reviewer"}}, Store: s})
	k := budget.Key{Agent: "claude-code", Session: "new"}
	views := map[string]func() (string, error){
		"Status": func() (string, error) { st, err := g.Status(ctx, k, ""); return st.Role, err },
		"RoleInfo": func() (string, error) {
			info, err := g.RoleInfo(ctx, k, "")
			return info.Status.Role, err
		},
		"Visible": func() (string, error) {
			shown, err := g.Visible(ctx, k, "", contract.Named("ctx_read", "ctx_edit"))
			return fmt.Sprint(shown), err
		},
		"Explain": func() (string, error) {
			x, err := g.Explain(ctx, k, "", "ctx_edit", nil)
			return x.Decision.Role, err
		},
	}
	want := map[string]string{"Status": "reviewer", "RoleInfo": "reviewer", "Visible": "map[ctx_read:true]", "Explain": "reviewer"}
	for name, view := range views {
		if got, err := view(); err != nil || got != want[name] {
			t.Errorf("%s of a new session: %s, %v; want %s", name, got, err, want[name])
		}
	}
	if _, found, err := g.Find(ctx, k.Session, k.Agent, true); found || err != nil {
		t.Errorf("find: %v, %v", found, err)
	}
	if list, err := g.Sessions(ctx, ""); len(list) != 0 || err != nil {
		t.Errorf("sessions %+v, %v", list, err)
	}
}

// Swap puts new rules in force for the next calls: a role appears, the
// default role and an agent's ceiling change.
func TestSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: budget.NewMemory()})
	if o, _ := g.Decide(ctx, Call{Session: budget.Key{Session: "a"}, Tool: "ctx_edit", Role: "auditor"}); o.Decision.Reasons[0].Code != contract.CodeUnknownRole {
		t.Fatalf("before: %+v", o.Decision)
	}
	set := testroles.Set(t, map[string]string{"auditor": "[role]\ninherits = \"reviewer\"\n"})
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	g.Swap(Rules{Engine: e, Roles: set, DefaultRole: "auditor", AgentMaxRoles: map[string]string{"x": "auditor"}})
	if o, _ := g.Decide(ctx, Call{Session: budget.Key{Session: "a"}, Tool: "ctx_edit"}); o.Decision.Role != "auditor" || o.Decision.Reasons[0].Code != contract.CodeToolDenied {
		t.Errorf("after: %+v", o.Decision)
	}
	if o, _ := g.Decide(ctx, Call{Session: budget.Key{Session: "b"}, Tool: "ctx_read"}); o.Decision.Role != "auditor" {
		t.Errorf("the new default role: %+v", o.Decision)
	}
	if g.MaxRole("x") != "auditor" || g.Engine() != e {
		t.Error("the new rules are not in force")
	}
}

// A decision made with Background is logged, with its events, by the time
// Wait returns, under the id the outcome carries; one made without it, by
// the time Decide returns.
func TestDecisionLoggedInTheBackground(t *testing.T) {
	t.Parallel()
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprint("background=", background), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			log, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			g := New(Options{Rules: Rules{Engine: engine(t)}, Store: budget.NewMemory(), Sinks: []events.Sink{rec}, Decisions: log})
			k := budget.Key{Session: "s", Agent: "a"}
			var ids []string
			for _, tool := range []string{"ctx_read", "ctx_edit"} {
				o, err := g.Decide(ctx, Call{Session: k, Tool: tool, Role: "reviewer", Reserve: true, Background: background})
				if err != nil {
					t.Fatal(err)
				}
				o.Wait()
				ids = append(ids, o.DecisionID)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], ids[0]) || !strings.Contains(lines[1], ids[1]) {
				t.Errorf("decision log %q, want entries %v", lines, ids)
			}
			v := rec.of(events.PolicyViolation)
			if len(v) != 1 || v[0].Violation.DecisionID != ids[1] || v[0].Violation.Tool != "ctx_edit" {
				t.Errorf("violations %+v, want one for ctx_edit, decision %s", v, ids[1])
			}
		})
	}
}

// Find takes a session id to the session of the one agent that has it, or
// says which agents have one; Sessions lists them with their budgets.
func TestFindAndSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: s})
	find := func(id, agent string, given bool) (budget.Key, bool, error) { return g.Find(ctx, id, agent, given) }
	if k, found, err := find("s", "a", false); found || err != nil || k != (budget.Key{Agent: "a", Session: "s"}) {
		t.Errorf("a new session: %v %v %v", k, found, err)
	}
	g.Decide(ctx, Call{Session: budget.Key{Agent: "claude-code", Session: "s"}, Tool: "ctx_read"})
	if k, found, err := find("s", "", false); !found || err != nil || k.Agent != "claude-code" {
		t.Errorf("the one agent's: %v %v %v", k, found, err)
	}
	if _, found, _ := find("s", "", true); found {
		t.Error("the agent-less session s was found")
	}
	g.Decide(ctx, Call{Session: budget.Key{Session: "s"}, Tool: "ctx_read", Role: "reviewer"})
	var amb *AmbiguousSessionError
	if _, _, err := find("s", "", false); !errors.As(err, &amb) || !slices.Equal(amb.Agents, []string{"", "claude-code"}) ||
		!strings.Contains(err.Error(), `several agents ("" (no agent), claude-code)`) {
		t.Errorf("two agents: %v", err)
	}
	if k, found, _ := find("s", "", true); !found || k.Agent != "" {
		t.Errorf("the agent-less session, named: %v %v", k, found)
	}
	if _, _, err := find("", "", false); err == nil {
		t.Error("an empty session id was looked up")
	}
	list, err := g.Sessions(ctx, "")
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v, %v", list, err)
	}
	for _, x := range list {
		if !x.Defined || x.Status.Role != x.Role || x.Status.Budget.Tokens.Limit == 0 {
			t.Errorf("%+v", x)
		}
	}
	s.SetRole(ctx, budget.Key{Session: "gone"}, "retired")
	if list, _ := g.Sessions(ctx, "gone"); len(list) != 1 || list[0].Defined {
		t.Errorf("a session whose role is gone: %+v", list)
	}
}

// A call decided "ask" is not allowed (a transport that cannot ask a
// person refuses it), takes no shell slot, is logged with its decision,
// and is an ApprovalRequested event, not a PolicyViolation; in shadow mode
// it runs, flagged.
func TestAskIsNotAllowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := engineOf(t, map[string]string{"careful": "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\n"})
	for _, shadow := range []bool{false, true} {
		t.Run(fmt.Sprint("shadow=", shadow), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "decisions.jsonl")
			log, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			s := budget.NewMemory()
			g := New(Options{Rules: Rules{Engine: e}, Store: s, Sinks: []events.Sink{rec}, Decisions: log, Shadow: shadow})
			k := budget.Key{Session: "s", Agent: "a"}
			o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Role: "careful", Reserve: true})
			if err != nil {
				t.Fatal(err)
			}
			if o.Decision.Decision != contract.Ask || o.Allowed != shadow || o.Shadowed != shadow || o.Reserved != shadow {
				t.Errorf("%+v", o)
			}
			asked := rec.of(events.ApprovalRequested)
			if len(asked) != 1 || len(rec.of(events.PolicyViolation)) != 0 || asked[0].Violation.Reasons[0].Code != contract.CodeApprovalRequired ||
				asked[0].Violation.DecisionID != o.DecisionID || asked[0].Shadow != shadow {
				t.Errorf("events: %+v", rec.events)
			}
			b, _ := os.ReadFile(path)
			if !strings.Contains(string(b), `"decision":"ask"`) || !strings.Contains(string(b), o.DecisionID) {
				t.Errorf("decision log: %s", b)
			}
			slots := int64(0)
			if shadow {
				slots = 1 // the call ran: it is counted
			}
			if c, _ := s.Get(ctx, k, ""); c.Shell != slots {
				t.Errorf("shell slots taken: %d, want %d", c.Shell, slots)
			}
		})
	}
}

// A call decided "ask" that a person approved (Call.Approved) runs: it
// takes its shell slot, is logged with the decision the policy made and
// who approved it, and is no ApprovalRequested event; the approval lets
// an ask run and nothing else (a denied call stays denied).
func TestApprovedAskRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := engineOf(t, map[string]string{"careful": "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\ndenied = [\"ctx_edit\"]\n"})
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	log, err := events.OpenDecisionLog(path, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s := budget.NewMemory()
	g := New(Options{Rules: Rules{Engine: e}, Store: s, Sinks: []events.Sink{rec}, Decisions: log})
	k := budget.Key{Session: "s", Agent: "a"}
	o, err := g.Decide(ctx, Call{Session: k, Tool: "ctx_shell", Role: "careful", Reserve: true, Approved: "elicitation"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Decision.Decision != contract.Ask || o.Decision.Allowed || !o.Allowed || !o.Approved || !o.Reserved {
		t.Errorf("approved: %+v", o)
	}
	if n := len(rec.of(events.ApprovalRequested)) + len(rec.of(events.PolicyViolation)); n != 0 {
		t.Errorf("events of an approved call: %+v", rec.events)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"approved_by":"elicitation"`) || !strings.Contains(string(b), `"decision":"ask"`) {
		t.Errorf("decision log: %s", b)
	}
	if c, _ := s.Get(ctx, k, ""); c.Shell != 1 {
		t.Errorf("shell slots taken: %d, want 1", c.Shell)
	}
	for _, tool := range []string{"ctx_edit"} {
		o, err := g.Decide(ctx, Call{Session: k, Tool: tool, Role: "careful", Reserve: true, Approved: "elicitation"})
		if err != nil || o.Allowed || o.Approved || o.Decision.Decision != contract.Deny {
			t.Errorf("an approval of a denied %s: %+v, %v", tool, o, err)
		}
	}
}

// A model the price table does not know is charged the default price, and
// said so once per model.
func TestUnknownModelWarnedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var warnings []string
	g := New(Options{Rules: Rules{Engine: engine(t)}, Store: budget.NewMemory(), OnError: func(err error) { warnings = append(warnings, err.Error()) }})
	k := budget.Key{Session: "s", Agent: "a"}
	var costs []int64
	for _, model := range []string{"gpt-9", "gpt-9", "claude-opus-9", "", "claude-sonnet-4-5-20250929"} {
		ch, err := g.Record(ctx, Result{Session: k, Tool: "ctx_read", Output: strings.Repeat("hello world ", 100), Model: model})
		if err != nil {
			t.Fatal(err)
		}
		costs = append(costs, ch.CostMicros)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], `no price for model "gpt-9": charged at the price of default ($2.50 in, $10.00 out`) ||
		!strings.Contains(warnings[1], `"claude-opus-9"`) {
		t.Errorf("warnings %q", warnings)
	}
	if costs[0] != costs[3] || costs[2] != costs[3] || costs[4] == costs[3] {
		t.Errorf("costs %v: unknown models at the default's price, a known one at its own", costs)
	}
}
