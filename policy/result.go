package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/cache"

	"github.com/agentharness/harness/contract"
)

// Results are read as OPA leaves them, AST values, rather than converted
// to Go maps and slices first: a decision's conversion cost about a tenth
// of its evaluation.

// asTerm is the result conversion that leaves a value as it is.
var asTerm = rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil })

// run evaluates pq of generation l on input within ctx, which the caller
// bounds: ctx's end cancels the evaluation (without the goroutine per
// evaluation OPA starts otherwise). It returns the query's one value, nil
// when it is undefined.
func (l *loaded) run(ctx context.Context, pq rego.PreparedEvalQuery, input ast.Value, opts ...rego.EvalOption) (ast.Value, error) {
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	rs, err := pq.Eval(ctx, append([]rego.EvalOption{rego.EvalParsedInput(input), rego.EvalExternalCancel(cancel), asTerm,
		rego.EvalInterQueryBuiltinValueCache(l.values)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, nil
	}
	t, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("unexpected result %T", rs[0].Expressions[0].Value)
	}
	return t.Value, nil
}

// maxCompiled bounds how many compiled regular expressions and glob
// patterns a generation keeps: each role's lists, the configuration's and
// what custom policies match with. OPA's own process-wide caches keep 100
// of each and then drop one at random on every miss, which a set of many
// roles would pass, compiling an expression on nearly every call; a bound
// keeps a policy that builds patterns from its input from growing it.
const maxCompiled = 4096

// newValueCache is the cache of compiled patterns of one generation.
func newValueCache() cache.InterQueryValueCache {
	n := maxCompiled
	return cache.NewInterQueryValueCache(context.Background(), &cache.Config{
		InterQueryBuiltinValueCache: cache.InterQueryBuiltinValueCacheConfig{MaxNumEntries: &n},
	})
}

// The terms of the result keys the reader looks up, made once.
var (
	keyDecision       = ast.StringTerm("decision")
	keyAllowed        = ast.StringTerm("allowed")
	keyRole           = ast.StringTerm("role")
	keyTool           = ast.StringTerm("tool")
	keyShellPolicy    = ast.StringTerm("shell_policy")
	keyShellTool      = ast.StringTerm("shell_tool")
	keyCompressOutput = ast.StringTerm("compress_output")
	keyReasons        = ast.StringTerm("reasons")
	keyWarnings       = ast.StringTerm("warnings")
	keySignal         = ast.StringTerm("signal")
	keyBudget         = ast.StringTerm("budget")
	keyAgentBudget    = ast.StringTerm("agent_budget")
	keyTokens         = ast.StringTerm("tokens")
	keyShell          = ast.StringTerm("shell")
	keyCost           = ast.StringTerm("cost")
	keyUsed           = ast.StringTerm("used")
	keyLimit          = ast.StringTerm("limit")
	keyPercent        = ast.StringTerm("percent")
	keyLevel          = ast.StringTerm("level")
	keyCode           = ast.StringTerm("code")
	keyMessage        = ast.StringTerm("message")
	keyPolicy         = ast.StringTerm("policy")
	keyRule           = ast.StringTerm("rule")
	keyAgent          = ast.StringTerm("agent")
	keyPeriod         = ast.StringTerm("period")
	keyDefined        = ast.StringTerm("defined")
	keyFrom           = ast.StringTerm("from")
	keyTo             = ast.StringTerm("to")
	keyBy             = ast.StringTerm("by")
)

// key is the term of key k: one made once for the keys the reader looks
// up (a switch, which costs less than a map's hash: a decision reads some
// thirty keys).
func key(k string) *ast.Term {
	switch k {
	case "decision":
		return keyDecision
	case "allowed":
		return keyAllowed
	case "role":
		return keyRole
	case "tool":
		return keyTool
	case "shell_policy":
		return keyShellPolicy
	case "shell_tool":
		return keyShellTool
	case "compress_output":
		return keyCompressOutput
	case "reasons":
		return keyReasons
	case "warnings":
		return keyWarnings
	case "signal":
		return keySignal
	case "budget":
		return keyBudget
	case "agent_budget":
		return keyAgentBudget
	case "tokens":
		return keyTokens
	case "shell":
		return keyShell
	case "cost":
		return keyCost
	case "used":
		return keyUsed
	case "limit":
		return keyLimit
	case "percent":
		return keyPercent
	case "level":
		return keyLevel
	case "code":
		return keyCode
	case "message":
		return keyMessage
	case "policy":
		return keyPolicy
	case "rule":
		return keyRule
	case "agent":
		return keyAgent
	case "period":
		return keyPeriod
	case "defined":
		return keyDefined
	case "from":
		return keyFrom
	case "to":
		return keyTo
	case "by":
		return keyBy
	}
	return ast.StringTerm(k)
}

// reader reads OPA's result values, remembering the first error.
type reader struct{ err error }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// get is o's value of k, nil when o has none.
func get(o ast.Object, k string) ast.Value {
	if o == nil {
		return nil
	}
	if t := o.Get(key(k)); t != nil {
		return t.Value
	}
	return nil
}

func (r *reader) object(v ast.Value, what string) ast.Object {
	o, ok := v.(ast.Object)
	if !ok {
		r.fail("%s: want an object, got %s", what, typeName(v))
	}
	return o
}

func (r *reader) str(o ast.Object, k string) string {
	s, ok := get(o, k).(ast.String)
	if !ok {
		r.fail("%s: want a string, got %s", k, typeName(get(o, k)))
	}
	return string(s)
}

func (r *reader) boolean(o ast.Object, k string) bool {
	b, ok := get(o, k).(ast.Boolean)
	if !ok {
		r.fail("%s: want a boolean, got %s", k, typeName(get(o, k)))
	}
	return bool(b)
}

func (r *reader) integer(o ast.Object, k string) int64 {
	n, ok := get(o, k).(ast.Number)
	if !ok {
		r.fail("%s: want a number, got %s", k, typeName(get(o, k)))
		return 0
	}
	i, ok := n.Int64()
	if !ok {
		r.fail("%s: %s is not a whole number", k, n)
	}
	return i
}

func (r *reader) reasons(o ast.Object, k string) []contract.Reason {
	list, ok := get(o, k).(*ast.Array)
	if !ok {
		r.fail("%s: want an array, got %s", k, typeName(get(o, k)))
		return nil
	}
	out := make([]contract.Reason, 0, list.Len())
	for i := range list.Len() {
		x := r.object(list.Elem(i).Value, k)
		reason := contract.Reason{Code: r.str(x, "code"), Message: r.str(x, "message")}
		if p, ok := get(x, "policy").(ast.String); ok {
			reason.Policy = string(p)
		}
		if p, ok := get(x, "rule").(ast.String); ok {
			reason.Rule = string(p)
		}
		out = append(out, reason)
	}
	return out
}

// budget reads the budget object of o.
func (r *reader) budget(o ast.Object) contract.Budget {
	b := r.object(get(o, "budget"), "budget")
	return contract.Budget{Tokens: r.dimension(b, "tokens"), Shell: r.dimension(b, "shell"), Cost: r.dimension(b, "cost")}
}

// agentBudget reads the agent_budget of o: null, or the dimensions it
// bounds.
func (r *reader) agentBudget(o ast.Object) *contract.AgentBudget {
	v := get(o, "agent_budget")
	switch v.(type) {
	case nil:
		r.fail("agent_budget: missing")
		return nil
	case ast.Null:
		return nil
	}
	x := r.object(v, "agent_budget")
	a := &contract.AgentBudget{Agent: r.str(x, "agent"), Period: r.str(x, "period"), Signal: r.str(x, "signal")}
	for _, dim := range []struct {
		key string
		dst **contract.Dimension
	}{{"tokens", &a.Tokens}, {"shell", &a.Shell}, {"cost", &a.Cost}} {
		if get(x, dim.key) != nil {
			d := r.dimension(x, dim.key)
			*dim.dst = &d
		}
	}
	return a
}

func (r *reader) dimension(o ast.Object, k string) contract.Dimension {
	x := r.object(get(o, k), dimensionName(k))
	return contract.Dimension{
		Used:    r.integer(x, "used"),
		Limit:   r.integer(x, "limit"),
		Percent: r.integer(x, "percent"),
		Level:   r.str(x, "level"),
	}
}

// dimensionName is how an error names dimension k of a budget: a constant
// for the dimensions there are, so that reading a decision builds no string
// for an error it has not met.
func dimensionName(k string) string {
	switch k {
	case "tokens":
		return "budget.tokens"
	case "shell":
		return "budget.shell"
	case "cost":
		return "budget.cost"
	}
	return "budget." + k
}

// typeName names the type of v as Rego does; "nothing" for none.
func typeName(v ast.Value) string {
	if v == nil {
		return "nothing"
	}
	return ast.ValueName(v)
}

// decisionFrom reads the policy's result into a Decision, checking its shape.
func decisionFrom(v ast.Value) (contract.Decision, error) {
	r := reader{}
	o := r.object(v, "decision")
	d := contract.Decision{
		Decision:       r.str(o, "decision"),
		Allowed:        r.boolean(o, "allowed"),
		Role:           r.str(o, "role"),
		Tool:           r.str(o, "tool"),
		ShellPolicy:    r.str(o, "shell_policy"),
		ShellTool:      r.boolean(o, "shell_tool"),
		CompressOutput: r.boolean(o, "compress_output"),
		Reasons:        r.reasons(o, "reasons"),
		Warnings:       r.reasons(o, "warnings"),
		Signal:         r.str(o, "signal"),
	}
	d.Budget = r.budget(o)
	d.AgentBudget = r.agentBudget(o)
	if r.err != nil {
		return contract.Decision{}, r.err
	}
	runs := d.Decision == contract.Allow || d.Decision == contract.Warn
	switch {
	case !runs && d.Decision != contract.Deny && d.Decision != contract.Ask:
		return contract.Decision{}, fmt.Errorf("decision %q is not allow, warn, ask or deny", d.Decision)
	case d.Allowed != runs:
		return contract.Decision{}, fmt.Errorf("allowed=%v contradicts decision %q", d.Allowed, d.Decision)
	case !runs && len(d.Reasons) == 0:
		return contract.Decision{}, fmt.Errorf("a decision %q without reasons", d.Decision)
	case d.Decision == contract.Ask && slices.ContainsFunc(d.Reasons, func(r contract.Reason) bool { return r.Code != contract.CodeApprovalRequired }):
		return contract.Decision{}, errors.New("an ask with reasons other than approval_required")
	}
	return d, nil
}
