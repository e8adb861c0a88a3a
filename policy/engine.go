package policy

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/storage"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/cache"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/policy/plan"
	harnessrego "github.com/agentharness/harness/rego"
)

// The policy's entry points: Query decides a call; the others answer what
// the surfaces would otherwise work out themselves (see harness.rego and
// switch.rego).
const (
	Query             = "data.harness.decision"
	SwitchQuery       = "data.harness.switch"
	StatusQuery       = "data.harness.status"
	LevelsQuery       = "data.harness.levels"
	VisibleQuery      = "data.harness.visible"
	ExplanationQuery  = "data.harness.explanation"
	SwitchTargetQuery = "data.harness.switch_targets"
	AllowanceQuery    = "data.harness.allowance"
)

// Engine decides tool calls. The zero value is not usable: call [New].
type Engine struct {
	cur    atomic.Pointer[loaded]
	bounds boundsOf
	// uncached turns the decision cache off (SetCaching).
	uncached atomic.Bool
}

// SetCaching turns the decision cache on (the default) or off: off, every
// call is evaluated, as when the evaluation itself is measured.
func (e *Engine) SetCaching(on bool) { e.uncached.Store(!on) }

// loaded is one prepared generation of data and policy. The decision is
// prepared at once; the other entry points when first asked (a command
// asks one or two of them).
type loaded struct {
	query rego.PreparedEvalQuery
	// plan is the decision's plan (see queryPlan).
	plan   queryPlan
	doc    *compiler.Document
	bundle *compiler.Bundle
	custom []compiler.Module

	compiler *ast.Compiler
	store    storage.Store
	cache    *decisionCache
	levels   levelsCache
	// edit is the edit tools' expression (EditPaths); nil when it does
	// not compile.
	edit *regexp.Regexp
	// edited keeps what edit says of the tools' names (edits).
	edited keptAnswers[bool]
	// values holds the patterns the policy compiled (see maxCompiled).
	values cache.InterQueryValueCache
	mu     sync.Mutex
	others map[string]*lazyQuery
	// prepMu serialises preparing queries on compiler, which OPA's
	// rego.New writes to (the evaluation mode it is set to).
	prepMu sync.Mutex
}

// lazyQuery is an entry point prepared on first use, and its plan.
type lazyQuery struct {
	once sync.Once
	pq   rego.PreparedEvalQuery
	err  error
	plan queryPlan
}

// queryPlan is the plan of an entry point (package plan), compiled in the
// background from the entry point's second evaluation on its generation
// (see loaded.planned). Until it is ready, and when it cannot be run (err
// says why), topdown evaluates the entry point.
type queryPlan struct {
	asked   atomic.Int64 // evaluations before the plan was ready
	once    sync.Once
	done    chan struct{}
	program atomic.Pointer[plan.Program]
	err     error
}

// prepared returns the prepared query of entry point q.
func (l *loaded) prepared(ctx context.Context, q string) (rego.PreparedEvalQuery, error) {
	lq := l.lazy(q)
	lq.once.Do(func() {
		l.prepMu.Lock()
		defer l.prepMu.Unlock()
		lq.pq, lq.err = prepareQuery(context.WithoutCancel(ctx), l.compiler, l.store, q)
	})
	return lq.pq, lq.err
}

// lazy returns the entry of entry point q (not the decision's), made on
// first use.
func (l *loaded) lazy(q string) *lazyQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	lq, ok := l.others[q]
	if !ok {
		lq = &lazyQuery{}
		l.others[q] = lq
	}
	return lq
}

// planOf is the plan of entry point q.
func (l *loaded) planOf(q string) *queryPlan {
	if q == Query {
		return &l.plan
	}
	return &l.lazy(q).plan
}

// prepareQuery prepares one entry point on the compiled modules and data.
func prepareQuery(ctx context.Context, c *ast.Compiler, store storage.Store, q string) (rego.PreparedEvalQuery, error) {
	pq, err := rego.New(
		rego.Query(q),
		rego.Compiler(c),
		rego.Store(store),
		rego.SetRegoVersion(ast.RegoV1),
		rego.StrictBuiltinErrors(true),
	).PrepareForEval(ctx)
	if err != nil {
		return pq, regoErrors(err)
	}
	return pq, nil
}

// Modules returns the harness's own Rego policy modules (without tests).
func Modules() []compiler.Module {
	var out []compiler.Module
	for _, f := range harnessrego.Policy() {
		out = append(out, compiler.Module{Name: f.Name, Source: f.Source})
	}
	return out
}

// TestModules returns the harness's own *_test.rego modules.
func TestModules() []compiler.Module {
	var out []compiler.Module
	for _, f := range harnessrego.Tests() {
		out = append(out, compiler.Module{Name: f.Name, Source: f.Source})
	}
	return out
}

// New prepares the policy over doc, with the custom policies (packages
// harness.custom.<name>; *_test.rego files are carried into bundles, not
// evaluated). An error means something could not be compiled, and is a
// strict.ErrorList naming every file and line when it can.
func New(ctx context.Context, doc *compiler.Document, custom ...compiler.Module) (*Engine, error) {
	l, err := prepareAll(ctx, doc, custom)
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(l)
	return e, nil
}

// Reload prepares doc and custom and swaps them in atomically: decisions
// already running finish on the old generation, later ones see the new. If
// they cannot be prepared the engine keeps the last good generation and the
// error is returned.
func (e *Engine) Reload(ctx context.Context, doc *compiler.Document, custom ...compiler.Module) error {
	l, err := prepareAll(ctx, doc, custom)
	if err != nil {
		return err
	}
	e.cur.Store(l)
	return nil
}

// Custom returns the custom modules in use (policies and their tests).
func (e *Engine) Custom() []compiler.Module { return e.cur.Load().custom }

// prepareAll checks the custom modules and prepares them with the harness's
// own policy; the tests among them go into the bundle only.
func prepareAll(ctx context.Context, doc *compiler.Document, custom []compiler.Module) (*loaded, error) {
	policies, tests, errs := splitCustom(custom)
	if len(errs) > 0 {
		return nil, errs
	}
	registerPatterns(doc)
	l, err := prepare(ctx, doc, append(Modules(), policies...))
	if err != nil {
		return nil, err
	}
	l.custom = custom
	if len(tests) > 0 {
		if l.bundle, err = compiler.NewBundle(doc, append(l.bundle.Modules, tests...)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// splitCustom checks the custom modules' packages and splits them into
// policies and tests.
func splitCustom(custom []compiler.Module) (policies, tests []compiler.Module, errs strict.ErrorList) {
	if errs := checkPackages(custom); len(errs) > 0 {
		return nil, nil, errs.Sort()
	}
	for _, m := range custom {
		if strings.HasSuffix(m.Name, "_test.rego") {
			tests = append(tests, m)
		} else {
			policies = append(policies, m)
		}
	}
	return policies, tests, nil
}

// Check compiles the custom policies with the harness's own, as New would,
// without data: it finds every problem of the policy files (packages,
// syntax, strict compilation, forbidden built-ins) even while the roles
// they would run on do not load. Its error is a strict.ErrorList.
func Check(custom []compiler.Module) error {
	policies, _, errs := splitCustom(custom)
	if len(errs) > 0 {
		return errs
	}
	if _, errs := compileModules(append(Modules(), policies...)); len(errs) > 0 {
		return errs
	}
	return nil
}

// compileModules parses and compiles the modules once, strictly and with
// the harness's capabilities.
func compileModules(modules []compiler.Module) (*ast.Compiler, strict.ErrorList) {
	parsed := make(map[string]*ast.Module, len(modules))
	var errs strict.ErrorList
	for _, m := range modules {
		p, err := ast.ParseModuleWithOpts(m.Location(), string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, regoErrors(err)...)
			continue
		}
		parsed[m.Location()] = p
	}
	if len(errs) > 0 {
		return nil, errs.Sort()
	}
	c := ast.NewCompiler().WithCapabilities(Capabilities()).WithStrict(true)
	if c.Compile(parsed); c.Failed() {
		return nil, regoErrors(c.Errors)
	}
	return c, nil
}

// Document returns the data document in use.
func (e *Engine) Document() *compiler.Document { return e.cur.Load().doc }

// Bundle returns the bundle (data and modules) in use, as `harness compile`
// writes it.
func (e *Engine) Bundle() *compiler.Bundle { return e.cur.Load().bundle }

// BundleName is the name of the harness's bundle, as decision logs name
// the bundles a decision was made with.
const BundleName = compiler.Root

// Revision is the revision of the bundle in use (its manifest's).
func (e *Engine) Revision() string { return e.cur.Load().bundle.Revision }

func prepare(ctx context.Context, doc *compiler.Document, modules []compiler.Module) (*loaded, error) {
	b, err := compiler.NewBundle(doc, modules)
	if err != nil {
		return nil, err
	}
	// Every entry point is prepared on the same compiler.
	c, errs := compileModules(b.Modules)
	if len(errs) > 0 {
		return nil, errs
	}
	store := inmem.NewFromReaderWithOpts(bytes.NewReader(b.Data),
		inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	pq, err := prepareQuery(ctx, c, store, Query)
	if err != nil {
		return nil, err
	}
	return &loaded{query: pq, doc: doc, bundle: b, compiler: c, store: store, others: map[string]*lazyQuery{},
		cache: cacheFor(b.Modules), values: newValueCache(), edit: editRegexp(doc),
		edited: keptAnswers[bool]{max: maxEdited}}, nil
}

// planned returns the plan of entry point q, or nil while it is not ready
// or cannot be run. The second call starts compiling it in the background:
// planning the decision takes about a tenth of preparing a generation (25
// ms with 55 roles), which a command that asks an entry point once
// (decide, status, a hook without its daemon) would pay for nothing; a
// gateway or daemon has it from about the third call on.
func (l *loaded) planned(q string) *plan.Program {
	qp := l.planOf(q)
	if p := qp.program.Load(); p != nil {
		return p
	}
	if qp.asked.Add(1) >= 2 {
		l.startPlan(q, qp)
	}
	return nil
}

// startPlan starts compiling the plan of entry point q, once.
func (l *loaded) startPlan(q string, qp *queryPlan) {
	qp.once.Do(func() {
		qp.done = make(chan struct{})
		go func() {
			defer close(qp.done)
			defer func() {
				// A panic in planning (OPA's planner, a custom policy it
				// did not foresee) leaves the entry point to topdown; it
				// must not end the process that decides.
				if r := recover(); r != nil {
					qp.err = fmt.Errorf("planning failed: %v", r)
				}
			}()
			l.prepMu.Lock()
			defer l.prepMu.Unlock()
			p, err := plan.Compile(context.Background(), l.compiler, l.store, q)
			if err != nil {
				qp.err = err
				return
			}
			qp.program.Store(p)
		}()
	})
}

// evalPlanned evaluates entry point q (prepared for topdown as pq) on
// input within b, from its plan when it has one. Topdown evaluates, under
// a context that ends with b, what the plan does not answer: an undefined
// value, an error (so that a refusal names OPA's own message), a plan not
// ready yet or that gave up, a policy the plan cannot run.
func (l *loaded) evalPlanned(b *bound, q string, pq rego.PreparedEvalQuery, input ast.Value) (ast.Value, error) {
	if p := l.planned(q); p != nil {
		if v, err := p.Eval(b.parent, input, b.planOptions(plan.Options{Values: l.values})); v != nil || b.over() {
			return v, err
		}
	}
	return l.run(b.context(), pq, input)
}

// waitPlan waits for the plan of entry point q, returning it or why there
// is none.
func (l *loaded) waitPlan(q string) (*plan.Program, error) {
	qp := l.planOf(q)
	l.startPlan(q, qp)
	<-qp.done
	return qp.program.Load(), qp.err
}

// cacheFor makes the decision cache of modules: the harness's own and the
// custom policies'. It reads them as written, not as compiled (the
// compiler rewrites object.get(input, "key", d) so that it reads the input
// whole); they were compiled already, so they parse.
func cacheFor(modules []compiler.Module) *decisionCache {
	own := map[string]bool{}
	for _, m := range Modules() {
		own[m.Location()] = true
	}
	var harness, custom []*ast.Module
	for _, m := range modules {
		p, err := ast.ParseModuleWithOpts(m.Location(), string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return &decisionCache{off: true}
		}
		if own[m.Location()] {
			harness = append(harness, p)
		} else {
			custom = append(custom, p)
		}
	}
	return newDecisionCache(harness, custom)
}

// Decide evaluates one call. Any problem during evaluation gives a deny
// whose reason (code evaluation_error or invalid_input) names it; the
// returned error is non-nil only when ctx ended first, and the decision is
// a deny then too.
//
// A call that differs from an earlier one only in its usage, within the
// same budget band, is answered from the decision cache (see cache.go).
func (e *Engine) Decide(ctx context.Context, in contract.Input) (contract.Decision, error) {
	if err := ctx.Err(); err != nil {
		return denied(in, contract.CodeEvalError, "policy evaluation stopped: "+err.Error()), err
	}
	l := e.cur.Load()
	var key string
	cached := false
	if !e.uncached.Load() {
		key, cached = l.cache.key(l.doc, in)
	}
	if cached {
		if d, ok := l.cache.get(key, in); ok {
			return d, nil
		}
	}
	d, evaluated, err := e.evaluate(ctx, l, in, false)
	if cached && evaluated {
		l.cache.put(key, d, l.doc, in)
	}
	return d, err
}

// decide evaluates the decision, never from the cache, with extra
// evaluation options (a tracer).
func (e *Engine) decide(ctx context.Context, in contract.Input, opts ...rego.EvalOption) (contract.Decision, error) {
	if err := ctx.Err(); err != nil {
		return denied(in, contract.CodeEvalError, "policy evaluation stopped: "+err.Error()), err
	}
	d, _, err := e.evaluate(ctx, e.cur.Load(), in, false, opts...)
	return d, err
}

// decideTopdown evaluates the decision with OPA's topdown evaluator, never
// its plan: the reference the plan is held equal to.
func (e *Engine) decideTopdown(ctx context.Context, in contract.Input) (contract.Decision, error) {
	d, _, err := e.evaluate(ctx, e.cur.Load(), in, true)
	return d, err
}

// evaluate evaluates the decision of in on generation l. evaluated is
// false when the decision is a deny for a problem of the evaluation (an
// error, the deadline, a malformed result) rather than the policy's.
//
// The decision is evaluated from its plan (package plan), unless topdown
// is asked for, a tracer is given, or the plan cannot run this policy.
func (e *Engine) evaluate(ctx context.Context, l *loaded, in contract.Input, topdown bool, opts ...rego.EvalOption) (d contract.Decision, evaluated bool, err error) {
	value, err := inputValue(in, l.shellPolicy(in.Role))
	if err != nil {
		return denied(in, contract.CodeInvalidInput, err.Error()), false, nil
	}
	b := e.bounded(ctx)
	defer b.stop()
	var v ast.Value
	if len(opts) == 0 && !topdown {
		v, err = l.evalPlanned(b, Query, l.query, value)
	} else {
		v, err = l.run(b.context(), l.query, value, opts...) // a tracer's evaluation
	}
	if b.over() {
		msg, err := b.stopped()
		return denied(in, contract.CodeEvalError, msg), false, err
	}
	if err != nil {
		return denied(in, contract.CodeEvalError, "policy evaluation failed: "+err.Error()), false, nil
	}
	if v == nil {
		return denied(in, contract.CodeEvalError, "policy evaluation failed: "+Query+" is undefined"), false, nil
	}
	d, err = decisionFrom(v)
	if err != nil {
		return denied(in, contract.CodeEvalError, "policy evaluation failed: malformed decision: "+err.Error()), false, nil
	}
	return d, true, nil
}

// inputValue builds the input document directly as an AST value, which
// saves OPA a conversion on every call. Arguments that are not an object
// are given as they are: the policy refuses them (invalid_input).
func inputValue(in contract.Input, shellPolicy string) (ast.Value, error) {
	var args ast.Value = ast.NewObject()
	if in.Arguments != nil {
		v, err := argumentsValue(in.Arguments)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		args = v
	}
	obj := ast.NewObject(
		ast.Item(inputKeys.role, names.term(in.Role)),
		ast.Item(inputKeys.tool, names.term(in.Tool)),
		ast.Item(inputKeys.upstream, names.term(in.Upstream)),
		ast.Item(inputKeys.upstreamTool, names.term(in.UpstreamTool)),
		ast.Item(inputKeys.arguments, ast.NewTerm(args)),
		ast.Item(inputKeys.shellPolicy, names.term(shellPolicy)),
		ast.Item(inputKeys.budget, usageTerm(in.Budget)),
		ast.Item(inputKeys.session, names.term(in.Session)),
		ast.Item(inputKeys.agent, names.term(in.Agent)),
		ast.Item(inputKeys.project, names.term(in.Project)),
	)
	if in.AgentBudget != nil {
		obj.Insert(inputKeys.agentBudget, usageTerm(*in.AgentBudget))
	}
	if len(in.Resolved) > 0 {
		obj.Insert(inputKeys.resolved, resolvedTerm(in.Resolved))
	}
	return obj, nil
}

// maxArgumentKeys is the most keys of an agent's arguments argumentsValue
// makes the object of itself; past it, ast.InterfaceToValue does.
const maxArgumentKeys = 16

// argumentsValue is ast.InterfaceToValue(args), the same value, made with
// fewer allocations when args is an object of at most maxArgumentKeys
// keys (as a tool's arguments are): its keys are kept terms (names, as an
// agent's tools repeat their keys on every call), and the terms of its
// values are made in one block. Each value is InterfaceToValue's.
func argumentsValue(args any) (ast.Value, error) {
	m, ok := args.(map[string]any)
	if !ok || len(m) > maxArgumentKeys {
		return ast.InterfaceToValue(args)
	}
	var buf [maxArgumentKeys][2]*ast.Term
	items, vals := buf[:0], make([]ast.Term, len(m))
	for k, x := range m {
		v, err := ast.InterfaceToValue(x)
		if err != nil {
			return nil, err
		}
		t := &vals[len(items)]
		t.Value = v
		items = append(items, ast.Item(names.term(k), t))
	}
	return ast.NewObject(items...), nil
}

// resolvedTerm is input.resolved: each path to the array of its
// resolutions, or null.
func resolvedTerm(r map[string][]string) *ast.Term {
	obj := ast.NewObject()
	for path, real := range r {
		if real == nil {
			obj.Insert(ast.StringTerm(path), ast.NullTerm())
			continue
		}
		terms := make([]*ast.Term, len(real))
		for i, s := range real {
			terms[i] = ast.StringTerm(s)
		}
		obj.Insert(ast.StringTerm(path), ast.ArrayTerm(terms...))
	}
	return ast.NewTerm(obj)
}

// inputKeys are the keys of the input document, made once: a term is not
// changed once made, so every input can hold the same.
var inputKeys = struct {
	role, tool, upstream, upstreamTool, arguments, shellPolicy, budget, session, agent, project, agentBudget, resolved,
	tokens, shell, costMicros *ast.Term
}{
	ast.StringTerm("role"), ast.StringTerm("tool"), ast.StringTerm("upstream"), ast.StringTerm("upstream_tool"),
	ast.StringTerm("arguments"), ast.StringTerm("shell_policy"), ast.StringTerm("budget"), ast.StringTerm("session"),
	ast.StringTerm("agent"), ast.StringTerm("project"), ast.StringTerm("agent_budget"), ast.StringTerm("resolved"),
	ast.StringTerm("tokens"), ast.StringTerm("shell"), ast.StringTerm("cost_micros"),
}

// names keeps the terms of the strings inputs repeat: a session's role,
// tool, session, agent and project names (see nameTerms).
var names nameTerms

// maxNameTerm is the longest string nameTerms keeps.
const maxNameTerm = 256

// nameTerms keeps a term for each of the strings it was last asked for:
// a term is not changed once made, so every input can hold the same, and
// a decision makes two allocations fewer for each of its names. Each
// string has a slot of a fixed table, chosen by its hash, which keeps the
// last string that fell in it: bounded whatever strings an agent sends,
// and a string another replaced is made again.
type nameTerms struct {
	once  sync.Once
	seed  maphash.Seed
	slots [512]atomic.Pointer[ast.Term]
}

// term is s's term.
func (n *nameTerms) term(s string) *ast.Term {
	if len(s) > maxNameTerm {
		return ast.StringTerm(s)
	}
	slot := &n.slots[n.slot(s)]
	if t := slot.Load(); t != nil && string(t.Value.(ast.String)) == s {
		return t
	}
	t := ast.StringTerm(s)
	slot.Store(t)
	return t
}

// slot is the index of s's slot.
func (n *nameTerms) slot(s string) uint64 {
	n.once.Do(func() { n.seed = maphash.MakeSeed() })
	return maphash.String(n.seed, s) % uint64(len(n.slots))
}

// usageTerm is a usage as the policy reads input.budget.
func usageTerm(u contract.Usage) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(inputKeys.tokens, ast.IntNumberTerm(int(u.Tokens))),
		ast.Item(inputKeys.shell, ast.IntNumberTerm(int(u.Shell))),
		ast.Item(inputKeys.costMicros, ast.IntNumberTerm(int(u.CostMicros))),
	)
}

// shellPolicy is the shell policy of role, which the engine gives the
// policy (input.shell_policy) for custom policies to read; "" for an
// unknown role.
func (l *loaded) shellPolicy(role string) string { return l.doc.Roles[role].ShellPolicy }

// denied is the decision for a call the engine could not evaluate.
func denied(in contract.Input, code, msg string) contract.Decision {
	return contract.Decision{
		Decision: contract.Deny,
		Role:     in.Role,
		Tool:     in.Tool,
		Reasons:  []contract.Reason{{Code: code, Message: msg}},
		Warnings: []contract.Reason{},
		Signal:   contract.LevelOK,
	}
}
