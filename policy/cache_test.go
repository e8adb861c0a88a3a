package policy

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/race"
	"github.com/agentharness/harness/internal/testroles"
)

// What the modules read of the input is found in the modules: the keys
// named, the input whole or by a computed key, a document of the
// harness's rules, and non-deterministic built-ins.
func TestInputReads(t *testing.T) {
	for _, tt := range []struct {
		name, src   string
		keys        string
		all, nondet bool
	}{
		{"nothing", "deny contains \"x\" if false", "", false, false},
		{"named keys", "deny contains \"x\" if { input.tool == \"a\"; input[\"project\"] == \"/p\" }", "project,tool", false, false},
		{"deep", "warn contains \"x\" if input.arguments.path.deeper == 1", "arguments", false, false},
		{"object.get of a key", "warn contains \"x\" if object.get(input, \"session\", \"\") == \"s\"", "session", false, false},
		{"object.get with a default read", "warn contains \"x\" if object.get(input, \"agent_budget\", input.budget).tokens > 1", "agent_budget,budget", false, false},
		{"object.get with a default of the rules", "warn contains \"x\" if object.get(input, \"agent_budget\", data.harness.budget) == {}", "agent_budget", true, false},
		{"object.get of a path", "warn contains \"x\" if object.get(input, [\"budget\", \"tokens\"], 0) > 1", "", true, false},
		{"computed key", "warn contains \"x\" if { some k; input[k] == 1 }", "", true, false},
		{"whole", "warn contains \"x\" if { some k, v in input; k == v }", "", true, false},
		{"walk", "warn contains \"x\" if { walk(input, [_, v]); v == 1 }", "", true, false},
		{"import", "import input.budget as b\nwarn contains \"x\" if b.tokens > 1", "budget", false, false},
		{"import whole", "import input as i\nwarn contains \"x\" if i.tokens > 1", "", true, false},
		{"the harness's rules", "warn contains \"x\" if data.harness.budget.tokens.percent > 50", "", true, false},
		{"the harness's functions", "warn contains data.harness._amount(\"cost\", 1) if true", "", true, false},
		{"data whole", "warn contains \"x\" if data.harness[\"budget\"]", "", true, false},
		{"compiled data", "warn contains \"x\" if data.harness.roles[input.role].privileged", "role", false, false},
		{"other custom policies", "warn contains \"x\" if data.harness.custom.other.flag", "", false, false},
		{"time", "warn contains \"x\" if time.now_ns() > 0", "", false, true},
		{"random", "warn contains \"x\" if { n := rand.intn(\"k\", 10); n > 5 }", "", false, true},
		// OPA does not mark it, but it checks the certificates' validity
		// against the clock.
		{"certificates verified", "deny contains \"x\" if { [ok, _] := crypto.x509.parse_and_verify_certificates(\"c\"); not ok }", "", false, true},
		// A built-in named as the value of a with is called in place of
		// the function it replaces.
		{"a function replaced by a built-in", "verify(_, _) := [true, {}, {}]\ndeny contains \"x\" if { [ok, _, _] := verify(\"t\", {}) with verify as io.jwt.decode_verify; not ok }", "", false, true},
		{"a random built-in in a with", "pick(_, _) := 1\nwarn contains \"x\" if { n := pick(\"k\", 10) with pick as rand.intn; n > 5 }", "", false, true},
		{"a built-in replaced", "warn contains \"x\" if { time.now_ns() > 0 with time.now_ns as 5 }", "", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := ast.MustParseModuleWithOpts("package harness.custom.p\n"+tt.src, ast.ParserOptions{RegoVersion: ast.RegoV1})
			r := inputReads([]*ast.Module{m}, true)
			if got := strings.Join(r.sortedKeys(), ","); got != tt.keys || r.all != tt.all || r.nondeterministic != tt.nondet {
				t.Errorf("keys %q all %v nondeterministic %v, want %q %v %v", got, r.all, r.nondeterministic, tt.keys, tt.all, tt.nondet)
			}
		})
	}
}

// The harness's own policy reads, of a call's input, what the cache keys
// by: a new read of the input in harness.rego shows here, to be looked at
// (the key takes it in anyway).
func TestHarnessReads(t *testing.T) {
	c := cacheFor(Modules())
	if c.off || c.exactUsage || c.exactAgentUsage {
		t.Fatalf("the harness's own policy: off %v, exact usage %v %v", c.off, c.exactUsage, c.exactAgentUsage)
	}
	if got, want := strings.Join(c.fields, ","), "role,tool,upstream,upstream_tool,arguments,agent,resolved"; got != want {
		t.Errorf("key fields %s, want %s", got, want)
	}
}

// Custom policies put what they read in the key, the usage itself when
// they read it, and turn the cache off when they call a non-deterministic
// built-in.
func TestCacheKeyOfCustomPolicies(t *testing.T) {
	for _, tt := range []struct {
		name, src         string
		fields            string
		exact, agent, off bool
	}{
		{"paths", fastPathPolicy, "role,tool,upstream,upstream_tool,arguments,agent,resolved", false, false, false},
		{"project", "deny contains \"p\" if input.project == \"/secret\"", "role,tool,upstream,upstream_tool,arguments,agent,project,resolved", false, false, false},
		{"usage", "warn contains \"u\" if input.budget.tokens > 5", "role,tool,upstream,upstream_tool,arguments,agent,resolved", true, false, false},
		{"agent usage", "warn contains \"u\" if input.agent_budget.tokens > 5", "role,tool,upstream,upstream_tool,arguments,agent,resolved", false, true, false},
		{"whole", "deny contains \"w\" if { some k, v in input; k == v }", strings.Join(keyFields, ","), true, true, false},
		{"rules", "warn contains \"r\" if data.harness.signal == \"OK\"", strings.Join(keyFields, ","), true, true, false},
		{"time", "warn contains \"t\" if time.now_ns() < 0", "role,tool,upstream,upstream_tool,arguments,agent,resolved", false, false, true},
		{"certificates verified", "deny contains \"c\" if { [ok, _] := crypto.x509.parse_and_verify_certificates(input.arguments.chain); not ok }", "role,tool,upstream,upstream_tool,arguments,agent,resolved", false, false, true},
		{"time through a with", "verify(_, _) := [true, {}, {}]\ndeny contains \"j\" if { [ok, _, _] := verify(input.arguments.token, {\"secret\": \"k\"}) with verify as io.jwt.decode_verify; not ok }", "role,tool,upstream,upstream_tool,arguments,agent,resolved", false, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if !strings.HasPrefix(src, "package") {
				src = "package harness.custom.p\n\n" + src
			}
			c := cacheFor(append(Modules(), compiler.Module{Name: "p.rego", Source: []byte(src)}))
			if got := strings.Join(c.fields, ","); got != tt.fields || c.exactUsage != tt.exact || c.exactAgentUsage != tt.agent || c.off != tt.off {
				t.Errorf("fields %s exact %v %v off %v, want %s %v %v %v", got, c.exactUsage, c.exactAgentUsage, c.off, tt.fields, tt.exact, tt.agent, tt.off)
			}
		})
	}
}

// Values the policy tells apart have different keys: the key is no
// concatenation that two calls could share.
func TestCacheKeysTellCallsApart(t *testing.T) {
	doc := compiler.Compile(testSet(t), compiler.DefaultConfig())
	c := cacheFor(Modules())
	base := contract.Input{Role: "coder", Tool: "ctx_read", Agent: "a"}
	with := func(f func(*contract.Input)) contract.Input { in := base; f(&in); return in }
	warnAt, costWarnAt := doc.Roles["coder"].Thresholds["tokens"].WarnAt, doc.Roles["coder"].Thresholds["cost"].WarnAt
	inputs := []contract.Input{
		base,
		with(func(in *contract.Input) { in.Tool = "ctx_rea"; in.Upstream = "d" }),
		with(func(in *contract.Input) { in.Tool = "ctx_rea"; in.UpstreamTool = "d" }),
		with(func(in *contract.Input) { in.Upstream = "ctx_read" }),
		with(func(in *contract.Input) { in.Agent = "" }),
		with(func(in *contract.Input) { in.Role = "admin" }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{} }),
		with(func(in *contract.Input) { in.Arguments = []any{} }),
		with(func(in *contract.Input) { in.Arguments = "" }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": "b"} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": []any{"b"}} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"ab": ""} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": "b", "c": "d"} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": map[string]any{"c": "d"}} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": "1"} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": 1.0} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": json.Number("1")} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": json.Number("1.0")} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": true} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": nil} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": "\xff"} }),
		with(func(in *contract.Input) { in.Arguments = map[string]any{"a": "\uFFFD"} }),
		// Past a threshold, the usage of that dimension itself.
		with(func(in *contract.Input) { in.Budget.Tokens = warnAt }),
		with(func(in *contract.Input) { in.Budget.Tokens = warnAt + 1 }),
		with(func(in *contract.Input) { in.Budget.CostMicros = costWarnAt }),
		with(func(in *contract.Input) { in.Budget.CostMicros = costWarnAt + 1 }),
		with(func(in *contract.Input) { in.Budget.Tokens, in.Budget.CostMicros = warnAt, costWarnAt }),
		with(func(in *contract.Input) { in.Budget.Shell = 99 }), // coder's shell budget admits no 100th call... not yet: 99+1 <= 100
	}
	seen := map[string]int{}
	for i, in := range inputs[:len(inputs)-1] {
		k, ok := c.key(doc, in)
		if !ok {
			t.Fatalf("input %d not cached: %+v", i, in)
		}
		if j, dup := seen[k]; dup {
			t.Errorf("inputs %d and %d share a key: %+v, %+v", j, i, inputs[j], in)
		}
		seen[k] = i
	}
	// Kinds of values the key does not know are not cached.
	if _, ok := c.key(doc, with(func(in *contract.Input) { in.Arguments = map[string]any{"a": struct{}{}} })); ok {
		t.Error("a struct in the arguments was cached")
	}
	if _, ok := c.key(doc, with(func(in *contract.Input) { in.Arguments = map[string]any{"a": strings.Repeat("x", maxKeyBytes)} })); ok {
		t.Error("arguments larger than a key were cached")
	}
}

// cacheRoles are the roles the differential tests run on: the test roles
// and the fast path's.
func cacheDoc(t *testing.T) *compiler.Document {
	t.Helper()
	files := maps.Clone(testRoles)
	maps.Copy(files, fastPathRoles)
	cfg := compiler.DefaultConfig()
	n := func(v int64) *int64 { return &v }
	cfg.AgentBudgets = map[string]compiler.AgentBudget{
		"budgeted":   {Period: "day", Tokens: n(1000), Shell: n(3), CostMicros: n(1_000_000), WarnPercent: 80, BlockPercent: 100},
		"shell-only": {Period: "total", Shell: n(2), WarnPercent: 50, BlockPercent: 100},
		// Bounding cost and no shell: its band begins where the role's
		// may end.
		"cost-only": {Period: "day", CostMicros: n(4_500_000), WarnPercent: 80, BlockPercent: 100},
	}
	cfg.Protect = compiler.Protect{Home: "/home/dev", Paths: []string{"/home/dev/.lean-ctx"}}
	set := testroles.Set(t, files)
	warnAboveBlock(t, set)
	return compiler.Compile(set, cfg)
}

// cachePolicies are custom policies that read what the key must hold: the
// arguments, the project, the usage, the agent's usage, the input whole,
// and the harness's own rules.
var cachePolicies = map[string]string{
	"none":    "",
	"paths":   fastPathPolicy,
	"project": "package harness.custom.p\n\ndeny contains \"not in /secret\" if input.project == \"/secret\"\n",
	"usage":   "package harness.custom.p\n\nwarn contains sprintf(\"%d tokens\", [input.budget.tokens]) if input.budget.tokens > 0\n",
	"agent":   "package harness.custom.p\n\nwarn contains sprintf(\"agent %v\", [input.agent_budget.shell]) if input.agent_budget.shell > 0\n",
	"whole":   "package harness.custom.p\n\ndeny contains \"session\" if { some k, v in input; k == \"session\"; v == \"s-deny\" }\n",
	"rules":   "package harness.custom.p\n\nwarn contains sprintf(\"at %d%%\", [data.harness.budget.tokens.percent]) if data.harness.budget.tokens.used > 0\n",
	"with":    "package harness.custom.p\n\nwarn contains sprintf(\"twice: %d%%\", [p]) if {\n\tp := data.harness.budget.tokens.percent with input.budget.tokens as input.budget.tokens * 2\n\tp >= 50\n}\n",
}

// checkCached decides in on e from the cache and without it, and fails
// unless the two are equal; it reports whether the cache answered.
func checkCached(t testing.TB, e *Engine, in contract.Input) bool {
	t.Helper()
	l := e.cur.Load()
	key, ok := l.cache.key(l.doc, in)
	if ok {
		l.cache.mu.RLock()
		_, ok = l.cache.m[key]
		l.cache.mu.RUnlock()
	}
	if _, err := e.cur.Load().waitPlan(Query); err != nil {
		t.Fatalf("no plan: %v", err)
	}
	got, err1 := e.Decide(context.Background(), in)
	want, err2 := e.decide(context.Background(), in)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("input %+v (from the cache: %v):\ncached   %+v %v\nuncached %+v %v", in, ok, got, err1, want, err2)
	}
	// The uncached decision, from the decision's plan, is topdown's.
	ref, err3 := e.decideTopdown(context.Background(), in)
	if err3 != nil || !reflect.DeepEqual(want, ref) {
		t.Fatalf("input %+v:\nplan    %+v\ntopdown %+v %v", in, want, ref, err3)
	}
	return ok
}

// pastAThreshold are usages with one dimension at or past a threshold
// (its warning, its exhaustion, the shell budget's last call), each with
// the other dimensions at several points of their clear band, one after
// the other: calls whose key holds that dimension's usage exactly and the
// others' band, so that some come from the cache.
func pastAThreshold(r compiler.RoleDoc) []contract.Usage {
	var out []contract.Usage
	set := setUsage
	dims := []string{"tokens", "shell", "cost"}
	for _, dim := range dims {
		th := r.Thresholds[dim]
		points := []int64{th.WarnAt, th.WarnAt + 1}
		for _, p := range []*int64{th.ExhaustedAt, th.Admits} {
			if p != nil {
				points = append(points, *p, *p+1)
			}
		}
		for _, n := range points {
			for _, k := range []int64{0, 1, 3} {
				u := contract.Usage{}
				set(&u, dim, n)
				for _, other := range dims {
					if other != dim {
						set(&u, other, max(r.Thresholds[other].WarnAt-1, 0)*k/3)
					}
				}
				out = append(out, u)
			}
		}
	}
	return out
}

// A call refused for an exhausted budget, made again with other usage of
// the dimensions below their thresholds (an agent retrying while its cost
// grows), comes from the cache: the refusal's message gives only the
// exhausted dimension's usage, which the key holds.
func TestCacheAnswersPastAThreshold(t *testing.T) {
	doc := cacheDoc(t)
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	exhausted := *doc.Roles["coder"].Thresholds["tokens"].ExhaustedAt
	warned := doc.Roles["coder"].Thresholds["tokens"].WarnAt
	for _, tokens := range []int64{exhausted, exhausted + 5, warned} {
		in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go"}, Session: "s", Agent: "a", Budget: contract.Usage{Tokens: tokens}}
		checkCached(t, e, in)
		for cost := range int64(5) {
			in.Budget.CostMicros = cost * 7
			if !checkCached(t, e, in) {
				t.Errorf("tokens %d, cost %d: not from the cache", tokens, in.Budget.CostMicros)
			}
		}
		in.Budget.Tokens++
		if checkCached(t, e, in) {
			t.Errorf("tokens %d: from the cache of tokens %d", in.Budget.Tokens, tokens)
		}
	}
}

// The role's band and the agent's are told apart: a call with the role's
// cost past a threshold and the agent's clear is not one with the role's
// clear and the agent's past it, though both bands are a clear shell and
// one cost (a warn came from the cache where OPA refuses).
func TestCacheTellsTheRolesBandFromTheAgents(t *testing.T) {
	doc := cacheDoc(t)
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	for _, cost := range []int64{4_500_000, 8_000_000} {
		a := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go"}, Session: "s", Agent: "cost-only",
			Budget: contract.Usage{CostMicros: cost}, AgentBudget: &contract.Usage{}}
		b := a
		b.Budget, b.AgentBudget = contract.Usage{}, &contract.Usage{CostMicros: cost}
		checkCached(t, e, a)
		checkCached(t, e, b)
		checkCached(t, e, a)
	}
}

// The cached engine decides as the uncached one over a grid of calls:
// roles with every kind of limit, tools of each kind and origin, arguments
// the rules and the policies look at, sessions, projects, agents with and
// without budgets, and usage around every threshold, under custom policies
// that read each part of the input. The usages of a call come one after
// the other, so that most are answered from the cache.
func TestCacheAgreesWithTheEngine(t *testing.T) {
	doc := cacheDoc(t)
	for _, name := range slices.Sorted(maps.Keys(cachePolicies)) {
		t.Run(name, func(t *testing.T) {
			var mods []compiler.Module
			if src := cachePolicies[name]; src != "" {
				mods = append(mods, compiler.Module{Name: "p.rego", Source: []byte(src)})
			}
			e, err := New(context.Background(), doc, mods...)
			if err != nil {
				t.Fatal(err)
			}
			relaxed(e)
			roles := []string{"coder", "reviewer", "zero-shell", "asks", "warn-above-block", "compress", "all-zero", "never-block", "nobody"}
			tools := []contract.Tool{{Name: "ctx_read"}, {Name: "ctx_shell"}, {Name: "lean__ctx_shell", Upstream: "lean", UpstreamTool: "ctx_shell"},
				{Name: "ctx_edit"}, {Name: "ctx_session"}}
			arguments := []any{map[string]any{"path": "main.go"}, map[string]any{"path": "secret"},
				map[string]any{"command": "harness role set admin"}}
			type agent struct {
				name  string
				usage []*contract.Usage
			}
			agents := []agent{{"none", []*contract.Usage{nil}}, {"budgeted", []*contract.Usage{{Shell: 2}, nil}},
				{"shell-only", []*contract.Usage{{Tokens: 5}}}, {"cost-only", []*contract.Usage{{}, {CostMicros: 3_600_000}, {CostMicros: 4_500_000}}}}
			exact := name == "usage" || name == "agent" || name == "whole" || name == "rules" || name == "with"
			switch {
			case race.Enabled:
				// Under the race detector, which checks the engine's
				// concurrency and not its logic (and where a call takes
				// fifty times as long), a corner of the grid: make
				// test-grids runs it whole without it.
				roles, tools, arguments = roles[:2], tools[:2], arguments[:1]
				agents = []agent{{"budgeted", []*contract.Usage{{Shell: 2}}}}
			case testing.Short() || name != "paths":
				// The other policies on fewer calls: they differ in what
				// they read, not in what the harness's rules do.
				roles, tools, arguments = roles[:5], tools[:3], arguments[:2]
				agents = []agent{{"none", []*contract.Usage{nil}}, {"budgeted", []*contract.Usage{{Shell: 2}}}}
			}
			calls, hits := 0, 0
			for i, role := range roles {
				for _, tool := range tools {
					for _, args := range arguments {
						for _, a := range agents {
							for _, au := range a.usage {
								session, project := []string{"s-ok", "s-deny"}[i%2], []string{"/p", "/secret"}[i%2]
								for _, u := range append(usages(doc.Roles[role]), pastAThreshold(doc.Roles[role])...) {
									in := contract.Input{Role: role, Tool: tool.Name, Upstream: tool.Upstream, UpstreamTool: tool.UpstreamTool,
										Arguments: args, Budget: u, AgentBudget: au, Session: session, Agent: a.name, Project: project}
									if checkCached(t, e, in) {
										hits++
									}
									calls++
								}
							}
						}
					}
				}
			}
			t.Logf("%d calls, %d from the cache", calls, hits)
			if exact && hits == 0 || !exact && hits < calls/10 {
				t.Errorf("only %d of %d calls from the cache: the grid does not test it", hits, calls)
			}
		})
	}
}

// FuzzCacheAgrees decides a call, then the same call with other usage, on
// the cached engine, and holds each equal to the uncached decision.
func FuzzCacheAgrees(f *testing.F) {
	doc := cacheDoc(&testing.T{})
	e, err := New(context.Background(), doc, compiler.Module{Name: "p.rego", Source: []byte(fastPathPolicy)})
	if err != nil {
		f.Fatal(err)
	}
	relaxed(e)
	names := append(slices.Sorted(maps.Keys(doc.Roles)), "nobody")
	agents := []string{"none", "budgeted", "shell-only", "cost-only"}
	f.Add(uint8(0), "ctx_read", "main.go", uint8(0), int64(0), int64(0), int64(0), int64(10), int64(1), int64(0), int64(0))
	f.Add(uint8(3), "ctx_shell", "secret", uint8(1), int64(5), int64(2), int64(100), int64(50), int64(3), int64(0), int64(2))
	f.Add(uint8(7), "lean__ctx_edit", "~/.lean-ctx/x", uint8(2), int64(-1), int64(99), int64(0), int64(1<<40), int64(0), int64(7), int64(1))
	f.Fuzz(func(t *testing.T, role uint8, tool, path string, agent uint8, tokens, shell, cost, tokens2, shell2, cost2, agentShell int64) {
		in := contract.Input{Role: names[int(role)%len(names)], Tool: tool, Arguments: map[string]any{"path": path},
			Budget: contract.Usage{Tokens: tokens, Shell: shell, CostMicros: cost}, Agent: agents[int(agent)%len(agents)],
			AgentBudget: &contract.Usage{Shell: agentShell}, Session: "s"}
		if strings.HasPrefix(tool, "lean__") {
			in.Upstream, in.UpstreamTool = "lean", strings.TrimPrefix(tool, "lean__")
		}
		checkCached(t, e, in)
		in.Budget = contract.Usage{Tokens: tokens2, Shell: shell2, CostMicros: cost2}
		checkCached(t, e, in)
		in.Budget = contract.Usage{Tokens: tokens2, Shell: shell, CostMicros: cost}
		checkCached(t, e, in)
		in.Budget = contract.Usage{Tokens: tokens, Shell: shell2, CostMicros: cost}
		checkCached(t, e, in)
		in.AgentBudget = &contract.Usage{Tokens: tokens2 % 1000, Shell: agentShell + 1}
		checkCached(t, e, in)
		// The path as the file system resolves it, and unresolved.
		in.Resolved = map[string][]string{path: {tool}}
		checkCached(t, e, in)
		in.Resolved = map[string][]string{path: nil}
		checkCached(t, e, in)
	})
}

// A reload starts with an empty cache: a decision cached before it is not
// given after it.
func TestCacheReload(t *testing.T) {
	ctx := context.Background()
	e := testEngine(t)
	in := contract.Input{Role: "coder", Tool: "ctx_read", Agent: "a"}
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Allow {
		t.Fatalf("%+v", d)
	}
	files := maps.Clone(testRoles)
	files["coder"] = "[tools]\ndenied = [\"ctx_read\"]\n"
	if err := e.Reload(ctx, compiler.Compile(testroles.Set(t, files), compiler.DefaultConfig())); err != nil {
		t.Fatal(err)
	}
	in.Budget.Tokens = 10
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Deny {
		t.Fatalf("after the reload: %+v", d)
	}
	// So does a reload with a custom policy.
	if err := e.Reload(ctx, e.Document(), compiler.Module{Name: "p.rego", Source: []byte("package harness.custom.p\n\ndeny contains \"no\" if input.tool == \"ctx_edit\"\n")}); err != nil {
		t.Fatal(err)
	}
	in.Tool = "ctx_edit"
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Deny || d.Reasons[0].Code != "policy" {
		t.Fatalf("after the reload with a policy: %+v", d)
	}
}

// A deny for an evaluation that did not finish (the deadline) is not kept:
// the next call is evaluated.
func TestCacheKeepsNoEvaluationError(t *testing.T) {
	ctx := context.Background()
	e := testEngine(t)
	e.SetBounds(Bounds{Timeout: time.Nanosecond})
	in := contract.Input{Role: "coder", Tool: "ctx_read", Agent: "a"}
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Deny || d.Reasons[0].Code != contract.CodeEvalError {
		t.Fatalf("with a deadline of 1ns: %+v", d)
	}
	relaxed(e)
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Allow {
		t.Fatalf("after the deadline: %+v", d)
	}
	// A cancelled context is refused before the cache is looked at.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if d, err := e.Decide(cctx, in); err == nil || d.Decision != contract.Deny {
		t.Fatalf("cancelled: %+v %v", d, err)
	}
}

// A decision from the cache is the caller's: changing it changes no later
// one.
func TestCachedDecisionsAreCopies(t *testing.T) {
	ctx := context.Background()
	e := testEngine(t)
	in := contract.Input{Role: "reviewer", Tool: "ctx_edit", Agent: "a"}
	d1, _ := e.Decide(ctx, in)
	d1.Reasons[0].Message = "changed"
	d2, _ := e.Decide(ctx, in)
	if d2.Reasons[0].Message == "changed" {
		t.Fatal("a cached decision shares its reasons with the caller's")
	}
}

// The levels of usages kept for the band are the policy's: over every
// role, usage around every threshold, and agents with and without a
// budget, the cached engine measures what the uncached one does, and it
// does keep levels.
func TestLevelsCacheAgrees(t *testing.T) {
	doc := cacheDoc(t)
	cached, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	uncached, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	uncached.SetCaching(false)
	kept := 0
	keep := race.Sample(stride)
	for _, name := range append(slices.Sorted(maps.Keys(doc.Roles)), "nobody") {
		for _, u := range usages(doc.Roles[name]) {
			for _, agent := range []string{"none", "budgeted", "shell-only"} {
				for _, au := range []*contract.Usage{nil, {}, {Tokens: 799, Shell: 1}, {Tokens: 800, Shell: 2}} {
					if !keep() {
						continue // a sample under the race detector (see stride)
					}
					usage := RoleUsage{Role: name, Usage: u, Agent: agent, AgentUsage: au}
					other := RoleUsage{Role: "coder", Usage: contract.Usage{Tokens: 7}, Agent: agent, AgentUsage: au}
					for range 2 { // the second from the cache, where the band allows
						got, err1 := cached.Levels(context.Background(), usage, other)
						want, err2 := uncached.Levels(context.Background(), usage, other)
						if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(got, want) {
							t.Fatalf("%+v:\ncached   %+v %v\nuncached %+v %v", usage, got, err1, want, err2)
						}
					}
					if _, ok := cached.cur.Load().levels.get(doc, []RoleUsage{usage}); ok {
						kept++
					}
				}
			}
		}
	}
	if kept < 100/stride {
		t.Errorf("only %d usages' levels kept: the grid does not test the cache", kept)
	}
}

// object.get(input, "key", default) is read, for the key, as input.key:
// the default is read too, when the key is absent (input.agent_budget is,
// for an agent without a budget). A user's policy that bounds "the agent's
// usage, else the session's" reads the session's usage through the
// default: the key must hold it, or a call in the same band as an earlier
// allowed one is allowed from the cache past the policy's bound.
func TestAttackCacheObjectGetDefault(t *testing.T) {
	doc := cacheDoc(t)
	for _, tt := range []struct{ name, src string }{
		{"a call", `deny contains "past 1000 tokens" if object.get(input, "agent_budget", input.budget).tokens > 1000`},
		{"an expression", `deny contains "past 1000 tokens" if { object.get(input, "agent_budget", input.budget, u); u.tokens > 1000 }`},
		{"the harness's rules", `deny contains "past 1000 tokens" if object.get(input, "agent_budget", data.harness.budget).tokens.used > 1000`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "package harness.custom.cap\n\n" + tt.src + "\n"
			e, err := New(context.Background(), doc, compiler.Module{Name: "policies/user/cap.rego", Source: []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			relaxed(e)
			// coder's tokens: 200000, a warning at 80%; both usages are clear.
			in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "main.go"}, Agent: "none", Session: "s"}
			for _, tokens := range []int64{500, 1500} {
				in.Budget = contract.Usage{Tokens: tokens}
				got, err1 := e.Decide(context.Background(), in)
				want, err2 := e.decide(context.Background(), in)
				if err1 != nil || err2 != nil || got.Decision != want.Decision {
					t.Errorf("%d tokens: the cached engine says %s, the policy %s (%v %v)", tokens, got.Decision, want.Decision, err1, err2)
				}
			}
		})
	}
}
