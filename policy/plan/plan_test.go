package plan

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"
)

// data is the base document of every case: some of it beside rules of the
// same package, as the harness's roles are.
const data = `{"t": {"roles": {"coder": {"allowed": ["read", "edit"], "limit": 10}, "reviewer": {"allowed": ["read"], "limit": 3}},
	"lists": [1, 2, 3], "big": 12345678901234567890, "half": 0.5}}`

// fixture compiles src (package t) and returns topdown's prepared query q
// and its plan.
func fixture(t testing.TB, src, q string) (rego.PreparedEvalQuery, *Program, error) {
	t.Helper()
	m, err := ast.ParseModuleWithOpts("t.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	c := ast.NewCompiler().WithEnablePrintStatements(false)
	if c.Compile(map[string]*ast.Module{"t.rego": m}); c.Failed() {
		t.Fatal(c.Errors)
	}
	var doc map[string]any
	if err := util.UnmarshalJSON([]byte(data), &doc); err != nil {
		t.Fatal(err)
	}
	store := inmem.NewFromObjectWithOpts(doc, inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	ctx := context.Background()
	pq, err := rego.New(rego.Query(q), rego.Compiler(c), rego.Store(store), rego.SetRegoVersion(ast.RegoV1),
		rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(ctx, c, store, q)
	return pq, p, err
}

// outcome is what a query gave: a value, nothing, or an error.
func outcome(v ast.Value, err error) string {
	switch {
	case err != nil:
		return "error"
	case v == nil:
		return "undefined"
	}
	return v.String()
}

// topdownOutcome evaluates pq on input as the harness does.
func topdownOutcome(pq rego.PreparedEvalQuery, input ast.Value) string {
	rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(input), asTerm)
	if err != nil {
		return "error"
	}
	if len(rs) == 0 {
		return "undefined"
	}
	return rs[0].Expressions[0].Value.(*ast.Term).Value.String()
}

// agrees says whether the plan's outcome is topdown's: the same value, or
// no value from either. Where one finds an error and the other nothing,
// the order of evaluation decided which it met first (a plan evaluates an
// object's members in another order than topdown); callers evaluate with
// topdown whenever a plan gives no value.
func agrees(plan, topdown string) bool {
	none := func(o string) bool { return o == "error" || o == "undefined" }
	return plan == topdown || none(plan) && none(topdown)
}

// asTerm leaves topdown's results as AST values (sets stay sets).
var asTerm = rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil })

// agree holds the plan of q in src equal to topdown on every input.
func agree(t testing.TB, src, q string, inputs []string) {
	t.Helper()
	pq, p, err := fixture(t, src, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range inputs {
		in, ok := document(raw)
		if !ok {
			t.Fatalf("input %s is not a document", raw)
		}
		want := topdownOutcome(pq, in)
		got := outcome(p.Eval(context.Background(), in, Options{}))
		if !agrees(got, want) {
			t.Errorf("input %s:\nplan    %s\ntopdown %s", raw, got, want)
		}
	}
}

// document is raw (a Rego term) as an input document, and whether it is
// one: ground, and through JSON, as the engine's inputs are (JSON has no
// object with a key twice; a term parsed by ast.ParseTerm may, and
// topdown's copy of it keeps both).
func document(raw string) (ast.Value, bool) {
	term, err := ast.ParseTerm(raw)
	if err != nil || !term.IsGround() {
		return nil, false
	}
	doc, err := ast.JSON(term.Value)
	if err != nil {
		return nil, false
	}
	v, err := ast.InterfaceToValue(doc)
	return v, err == nil
}

// planCases are policies that use every kind of statement a plan has, each
// with inputs that take each of its ways.
var planCases = []struct {
	name, src string
	inputs    []string
}{
	{"complete rules, defaults and else", `package t
default level := "none"
level := "high" if input.n > 10
else := "mid" if input.n > 5
else := "low" if input.n >= 0
x := {"level": level, "n": input.n, "half": data.t.half, "big": data.t.big}`,
		[]string{`{"n": 11}`, `{"n": 6}`, `{"n": 0}`, `{"n": -1}`, `{}`, `{"n": "x"}`, `{"n": 1.5}`, `[]`, `null`}},
	{"number literals, made once and shared by every evaluation", `package t
scaled := input.n * 2.5
x := {"a": 1.5, "b": scaled, "c": 12345678901234567890, "d": [0.5 | input.n > 1e3], "e": 1.5 + 1.5, "f": [1.5, 1.5, scaled]}`,
		[]string{`{"n": 2}`, `{"n": 2000}`, `{"n": 0.5}`, `{}`, `{"n": "x"}`}},
	{"partial sets and objects, several bodies", `package t
reasons contains "too many" if input.n > 3
reasons contains sprintf("role %s", [input.role]) if not data.t.roles[input.role]
reasons contains r if { some r in input.extra; is_string(r) }
counts[k] := count(v) if { some k, v in input.groups }
x := {"reasons": reasons, "counts": counts}`,
		[]string{`{"n": 4, "role": "coder"}`, `{"n": 1, "role": "nobody", "extra": ["a", 1, "b", "a"]}`,
			`{"groups": {"a": [1, 2], "b": "xyz", "c": {"k": 1}}}`, `{"groups": [[1], [2, 3]]}`, `{"extra": {"k": "v"}}`, `{"extra": "abc"}`}},
	{"functions of several bodies", `package t
kind(x) := "number" if is_number(x)
kind(x) := "string" if is_string(x)
kind(x) := "other" if { not is_number(x); not is_string(x) }
limit(role) := data.t.roles[role].limit
limit(role) := 0 if not data.t.roles[role]
x := [kind(v) | some v in input.values]
y := limit(input.role)`,
		[]string{`{"values": [1, "a", null, [], {"k": 1}], "role": "coder"}`, `{"values": [], "role": "x"}`, `{"role": 7}`}},
	{"loops: every, not, comprehensions, sets, walk", `package t
all_read if every r in data.t.roles { "read" in r.allowed }
some_edit if { some name; "edit" in data.t.roles[name].allowed; name == input.role }
strings := {s | walk(input, [_, s]); is_string(s)}
paths := [p | walk(input, [p, v]); v == "secret"]
pairs := {[a, b] | some a in data.t.lists; some b in data.t.lists; a < b}
obj := {k: v | some k, v in input; k != "skip"}
missing if not input.present
x := {"all_read": all_read, "some_edit": some_edit, "strings": strings, "paths": paths, "pairs": pairs, "obj": obj, "missing": missing}`,
		[]string{`{"role": "coder", "a": {"b": ["secret", {"c": "secret"}]}, "skip": 1}`, `{"role": "reviewer", "present": true}`,
			`{"role": "coder", "n": {"1": [2, 3]}, "s": "secret"}`}},
	{"built-ins the harness uses", `package t
x := {
	"glob": glob.match("ctx_*", ["_"], input.tool),
	"regex": regex.match("^[a-z]+$", input.tool),
	"get": object.get(input, ["a", "b"], "default"),
	"keys": object.keys(data.t.roles),
	"union": object.union({"a": 1}, input),
	"arith": [floor(input.n / 3), input.n % 4, input.n * 2, input.n - 1, input.n + 0.5],
	"strings": [lower(input.tool), trim_right(input.tool, "_"), substring(input.tool, 1, 3), startswith(input.tool, "ctx"), endswith(input.tool, "x"), concat(",", ["a", input.tool])],
	"sorted": sort(["b", "a", input.tool]),
	"type": type_name(input.tool),
	"or": {1, 2} | {input.n},
	"member": input.tool in {"ctx_read", "ctx_edit"},
}`,
		[]string{`{"tool": "ctx_read", "n": 7}`, `{"tool": "Ab_", "n": -7, "a": {"b": 1}}`, `{"tool": "", "n": 0}`, `{"tool": "ctx_edit", "n": 1e3}`}},
	{"errors: conflicts and built-ins", `package t
one := input.a
one := input.b
f(x) := 1 if x > 0
f(x) := 2 if x > 1
x := {"one": one, "f": f(input.n), "div": 1 / input.d, "s": sprintf("%d", [input.n])}`,
		[]string{`{"a": 1, "b": 1, "n": 1, "d": 1}`, `{"a": 1, "b": 2, "n": 1, "d": 1}`, `{"a": 1, "n": 2, "d": 1}`, `{"a": 1, "n": 1, "d": 0}`, `{"n": 1}`}},
	{"with: along paths, nested, with functions, mocks and memos", `package t
y := input.a
g := {"a": input.a, "b": input.b}
f(v) := v + input.b
twice(v) := v * 2
size(_) := 42
no_b if not input.b
x := {
	"y": [v | v := y with input.a as 1],
	"from input": [v | v := y with input.a as input.b],
	"deep": [v | v := input.p.q.r with input.p.q.r as "z"],
	"kept": [v | v := input.p with input.p.q.r as "z"],
	"made": [v | v := input.m.n.o with input.m.n.o as 3],
	"replaced": [v | v := input.s with input.s.t as 4],
	"root": [v | v := input with input as {"k": 1}],
	"memo": [[v | v := g], [v | v := g with input.b as 9], [v | v := g], [v | v := y]],
	"function": [v | v := f(1) with input.b as 10],
	"two": [v | v := [y, input.b] with input.a as "A" with input.b as "B"],
	"not": [v | v := no_b with input.b as false],
	"after not": [v | not y with input.a as false; v := y],
	"after undefined": [w | v := [1 | y == 7 with input.a as 1]; w := [v, input.a]],
	"undefined value": [v | v := y with input.a as input.nope],
	"mock": [v | v := twice(3) with twice as 5],
	"mocked by": [v | v := count([1, 2]) with count as size],
	"after": [[v | v := y], [v | v := input.b]],
}`,
		[]string{`{"a": 5, "b": 2, "p": {"q": {"r": "x", "o": 1}, "w": 0}, "s": "str", "m": {}}`, `{}`, `{"p": "x", "m": {"n": 1}}`,
			`{"a": {"k": 1}, "b": 1.5, "s": {"t": 0, "u": 1}}`, `[]`, `null`, `"x"`}},
	{"regex.match answers remembered across evaluations", `package t
x := [
	regex.match(input.p, input.s),
	regex.match("^a", input.s),
	regex.match(input.p, "abc"),
	[m | some v in input.list; m := regex.match(input.p, v)],
]`,
		// One program evaluates the inputs in turn: an answer kept for one
		// pair must never answer another (same subject, other pattern;
		// same pattern, other subject), and an error is not kept.
		[]string{`{"p": "^a", "s": "abc", "list": ["a", "b"]}`, `{"p": "^b", "s": "abc", "list": ["a", "b"]}`,
			`{"p": "^a", "s": "bcd", "list": ["b", "a"]}`, `{"p": "(", "s": "abc"}`, `{"p": "^a", "s": "abc", "list": ["a", "b"]}`,
			`{"p": "c$", "s": "abc", "list": [1, "xc"]}`, `{"p": "^a", "s": 7}`}},
	{"division, a zero dividend taking the shortcut", `package t
x := [input.a / input.b, 0 / input.b]`,
		[]string{`{"a": 0, "b": 5}`, `{"a": 0, "b": 1}`, `{"a": 0, "b": 2147483647}`, `{"a": 0, "b": 2147483648}`,
			`{"a": -0, "b": 5}`, `{"a": 0.0, "b": 5}`, `{"a": 0, "b": -3}`, `{"a": 0, "b": 0}`, `{"a": 0, "b": 0.5}`,
			`{"a": 0, "b": 1e2}`, `{"a": 6, "b": 3}`, `{"a": 7, "b": 2}`, `{"a": 0, "b": "5"}`, `{"a": "0", "b": 5}`}},
	{"empty sets: literals shared, sets added to made each time", `package t
s contains v if some v in input.list
e := set() if input.none
x := [count(s), s != set(), input.v != set(), input.v == set(), e, {y | some y in input.list; y > 1} == set()] if {
	some name
	data.t.roles[name].allowed != set()
}`,
		[]string{`{"list": [1, 2], "v": [], "none": true}`, `{"list": [], "v": {}}`, `{"list": [0], "v": []}`, `{"v": 1}`, `{}`}},
	{"array and set literals: made at once, constants shared", `package t
pair := ["a", 1]
names(n) := ["x", "y", 1e2, 100, n]
letters := {"p", "q", "p", 1, 1.0, 2.50}
x := {
	"nested": [[1, 2], [input.a, [3, input.b]], []],
	"const": [pair, pair == ["a", 1], ["a", 1] == input.l, count(pair), pair[1]],
	"function": [names(input.a), names("z"), names(input.a) == names(input.a)],
	"sets": [letters, input.a in {"p", 3, 3.0}, count({1, 2, 2}), {input.a, 1, input.b} == {1, input.a, input.b}, {1, input.a}],
	"in a loop": [[v, 1, ["c"]] | some v in input.l],
	"members": {"k": [1, 2], "s": {"t"}, "e": [], "f": set()},
	"format": sprintf("%v %v %s", [input.a, [1e3], "s"]),
}`,
		[]string{`{"a": "p", "b": 2, "l": ["a", 1]}`, `{"a": 3, "l": [1, "x"]}`, `{"a": 1.0, "b": [], "l": []}`, `{"b": 1}`, `{"a": {"k": ["v"]}, "l": "s"}`, `{}`}},
	{"rules of the data alone, kept across evaluations", `package t
names := [n | some n, _ in data.t.roles]
limits := {r: v.limit | some r, v in data.t.roles}
total := sum([v | some v in limits])
nothing if data.t.nope
conflict := 1 if data.t.half > 0
conflict := 2 if data.t.half > 0
small := [l | some l in data.t.lists; l < 3]
mixed := count(names) + input.n
x := {
	"names": names, "limits": limits, "total": total, "nothing": nothing, "small": small, "mixed": mixed,
	"again": [names, array.concat(small, [input.n])],
	"with": [v | v := total with input.n as 1],
	"conflict": [c | input.conflict; c := conflict],
}`,
		// One program evaluates the inputs in turn: a value kept from one
		// evaluation answers the next, and an error is not kept.
		[]string{`{"n": 1}`, `{"n": 2, "conflict": true}`, `{"n": 3}`, `{}`, `{"n": 4, "conflict": true}`}},
	{"equal values spelled differently: the first kept, as topdown keeps it", `package t
o[k] := k if some k in input.l
v := input.a if true
v := input.b if true
a := [1] if true
a := [1.0] if true
x := [o, v, a]`,
		[]string{`{"l": [1.0, 1], "a": 1, "b": 1.0}`, `{"l": [1, 1.0, 1e0], "a": 1.0, "b": 1}`, `{"l": [2], "a": 1, "b": 2}`, `{"l": []}`}},
	{"undefined", `package t
x := 1 if input.yes`,
		[]string{`{"yes": true}`, `{"yes": false}`, `{}`}},
}

func TestPlanAgreesWithTopdown(t *testing.T) {
	for _, tt := range planCases {
		t.Run(tt.name, func(t *testing.T) {
			agree(t, tt.src, "data.t.x", tt.inputs)
		})
	}
}

// The cases give each outcome, so that agreement is not agreement on one.
func TestPlanCasesCoverOutcomes(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range planCases {
		pq, _, err := fixture(t, tt.src, "data.t.x")
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range tt.inputs {
			o := topdownOutcome(pq, ast.MustParseTerm(raw).Value)
			if o != "error" && o != "undefined" {
				o = "value"
			}
			seen[o] = true
		}
	}
	for _, o := range []string{"value", "undefined", "error"} {
		if !seen[o] {
			t.Errorf("no case gives %s", o)
		}
	}
}

// What the interpreter cannot run is refused when compiled, never run
// differently: a with on data, a built-in that is not a function of its
// arguments.
func TestUnsupportedIsRefused(t *testing.T) {
	for _, src := range []string{
		// Topdown lays a with's value over the data: a read at the path
		// sees the value alone, a read above it the data merged with it.
		"package t\nx := [v | v := data.t.roles with data.t.roles.coder as {\"x\": 1}]",
		"package t\nx := [v | v := data.t.half with data.t.half as 7]",
		"package t\nall := data.t.roles\nx := [v | v := all with data.t.roles.coder as {\"limit\": 0}]",
		"package t\nx := time.now_ns()",
		"package t\nx := opa.runtime()",
		"package t\nx := http.send({\"method\": \"get\", \"url\": input.url})",
		"package t\nx := rand.intn(\"k\", 10)",
	} {
		_, _, err := fixture(t, src, "data.t.x")
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%q: %v, want ErrUnsupported", src, err)
		}
	}
}

// A long evaluation ends with its context: loops, and built-ins that
// watch topdown's Cancel.
func TestEvalEndsWithItsContext(t *testing.T) {
	for _, src := range []string{
		"package t\nx := count([1 | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); i == j + 1])",
		"package t\nx := count(numbers.range(1, 100000000))",
	} {
		_, p, err := fixture(t, src, "data.t.x")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		v, err := p.Eval(ctx, ast.NewObject(), Options{})
		cancel()
		if err == nil {
			t.Errorf("%q: %v, want an error", src, v)
		}
	}
}

// A plan is read by many evaluations at once; each has its own locals,
// and what one builds is not seen by another.
func TestConcurrentEvaluations(t *testing.T) {
	src := planCases[3].src
	_, p, err := fixture(t, src, "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	inputs := planCases[3].inputs
	want := make([]string, len(inputs))
	for i, raw := range inputs {
		want[i] = outcome(p.Eval(context.Background(), ast.MustParseTerm(raw).Value, Options{}))
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for n := range 50 {
				i := (g + n) % len(inputs)
				if got := outcome(p.Eval(context.Background(), ast.MustParseTerm(inputs[i]).Value, Options{})); got != want[i] {
					errs <- errors.New(got)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// FuzzPlanAgrees holds every case's plan equal to topdown on any input.
func FuzzPlanAgrees(f *testing.F) {
	type fx struct {
		name string
		pq   rego.PreparedEvalQuery
		p    *Program
	}
	var fxs []fx
	for _, tt := range append(planCases[:len(planCases):len(planCases)], withCases...) {
		pq, p, err := fixture(f, tt.src, "data.t.x")
		if errors.Is(err, ErrUnsupported) {
			continue // a with case the plan refuses (TestWithAgreesWithTopdown)
		}
		if err != nil {
			f.Fatal(err)
		}
		fxs = append(fxs, fx{tt.name, pq, p})
		for _, in := range tt.inputs {
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, raw string) {
		value, ok := document(raw)
		if !ok || strings.Contains(raw, "data") {
			return
		}
		for _, x := range fxs {
			want := topdownOutcome(x.pq, value)
			got := outcome(x.p.Eval(context.Background(), value, Options{}))
			if !agrees(got, want) {
				t.Fatalf("%s, input %s:\nplan    %s\ntopdown %s", x.name, raw, got, want)
			}
		}
	})
}

// A defect that panics inside an evaluation gives an error (the engine
// then asks topdown), not a crashed process.
func TestPanicIsAnError(t *testing.T) {
	p := &Program{locals: 3, consts: []*ast.Term{ast.BooleanTerm(true)},
		blocks: []*block{{stmts: []stmt{{kind: kAssignVar, a: 7, b: 2}}}}} // no local 7
	v, err := p.Eval(context.Background(), ast.NewObject(), Options{})
	if err == nil || !strings.Contains(err.Error(), "plan evaluation failed") {
		t.Fatalf("%v, %v: want an error", v, err)
	}
}

// bigRule is a rule of n locals and more: a call of it grows the
// evaluation's stack of locals past its first 256.
func bigRule(n int) string {
	var b strings.Builder
	b.WriteString("big := [")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "input.k%d", i)
	}
	b.WriteString("]\n")
	return b.String()
}

// A call's locals start undefined after the stack of locals grows: the
// copies of the locals of the calls in progress are not a new call's
// (they made a complete rule skip its default, and an undefined rule a
// value).
func TestFreshLocalsAfterTheStackGrows(t *testing.T) {
	for _, src := range []string{
		"package t\n" + bigRule(300) + "a contains 1 if big\nc := 5 if input.never\nx := [a, c]\n",
		"package t\n" + bigRule(300) + "a if true\na if big\ndefault allow := false\nallow if input.admin == true\nx := [a, allow]\n",
	} {
		agree(t, src, "data.t.x", []string{`{}`, `{"admin": false}`, `{"admin": true}`, `{"k0": 1}`})
	}
}

// nested is an input depth objects deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":[`, depth) + `"x"` + strings.Repeat(`]}`, depth)
}

// walk's values are all kept before they are scanned, and their paths
// grow with the depth of the input: a plan gives up on a walk of more
// than maxRelation terms (a caller asks topdown) rather than hold the
// square of an agent's nesting; shallower, it agrees with topdown.
func TestWalkIsBounded(t *testing.T) {
	src := `package t
x := count([p | walk(input, [p, v]); v == "secret"])
y := count([v | walk(input, [_, v]); v == "secret"])`
	for _, q := range []string{"data.t.x", "data.t.y"} {
		_, p, err := fixture(t, src, q)
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.Eval(context.Background(), ast.MustParseTerm(nested(2500)).Value, Options{})
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, %v: want ErrTooLarge", q, v, err)
		}
		agree(t, src, q, []string{nested(1), nested(20), nested(100)})
	}
}

// What regex.match's answers are kept for is bounded: an agent that sends
// a new string on every call fills the memo only to its bounds, and a
// long string is never kept.
func TestMatchesAreBounded(t *testing.T) {
	_, p, err := fixture(t, "package t\nx := [regex.match(\"^a\", input.s), regex.match(input.p, \"a\")]", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	eval := func(s, pattern string) {
		in := ast.NewObject(ast.Item(ast.StringTerm("s"), ast.StringTerm(s)), ast.Item(ast.StringTerm("p"), ast.StringTerm(pattern)))
		want := ast.NewArray(ast.BooleanTerm(strings.HasPrefix(s, "a")), ast.BooleanTerm(regexp.MustCompile(pattern).MatchString("a")))
		if v, err := p.Eval(context.Background(), in, Options{}); err != nil || v.Compare(want) != 0 {
			t.Fatalf("%.40q %.40q: %v %v, want %v", s, pattern, v, err, want)
		}
	}
	for i := range 3 * maxMatches {
		eval(fmt.Sprintf("a%d", i), "a")
		if n := len(p.matches.m); n > maxMatches {
			t.Fatalf("%d answers kept, at most %d", n, maxMatches)
		}
	}
	long := strings.Repeat("a", maxMatchString+1)
	eval(long, "a")
	if _, ok := p.matches.get(matchKey{"^a", long}); ok {
		t.Error("an answer for a subject longer than maxMatchString was kept")
	}
	if _, ok := p.matches.get(matchKey{"^a", "a0"}); ok {
		t.Error("the memo was not forgotten when full")
	}
	// Patterns an agent could have a policy build: bounded in bytes.
	big := "c|" + strings.Repeat("b", 40_000)
	for i := range maxMatchBytes/len(big) + 10 {
		eval("x", fmt.Sprintf("%s%d", big, i))
		if p.matches.bytes > maxMatchBytes {
			t.Fatalf("%d bytes of keys kept, at most %d", p.matches.bytes, maxMatchBytes)
		}
	}
}

// Between two looks at the context the plan does one statement, whatever
// it costs: a with in a loop copies the input once a pass, a built-in
// takes all of it, and an agent chooses how large it is. With the context
// already ended, such a loop over 40,000 keys stops at once; when the
// plan looked every 4,096 statements, it ran thousands of passes
// (seconds, and a gigabyte of copies) first.
func TestWorkBetweenLooksIsBounded(t *testing.T) {
	in := ast.MustParseTerm(bigObject(40_000)).Value
	for _, src := range []string{
		"package t\ny := input.probe\nx := count([k | some k, _ in input; y == k with input.probe as k])",
		"package t\nx := count([v | some k, _ in input; v := object.union(input, {\"probe\": k})])",
	} {
		canceled(t, src, in)
	}
}

// jsonInput reads raw as the engine reads an agent's arguments: JSON,
// then ast.InterfaceToValue.
func jsonInput(t testing.TB, raw string) ast.Value {
	t.Helper()
	var x any
	if err := util.UnmarshalJSON([]byte(raw), &x); err != nil {
		t.Fatal(err)
	}
	v, err := ast.InterfaceToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A remembered answer keeps no more than its key: a subject may be a
// slice of a far larger string (a submatch of an agent's command, as
// examples/policies/destructive_shell.rego matches a command's flags),
// which a key that was the argument itself kept alive for as long as the
// program (63 MiB after 64 calls, before keys were copied).
func TestMatchesKeepNoLargeStrings(t *testing.T) {
	src := "package t\nx := [r | some m in regex.find_all_string_submatch_n(`rm\\s+(-[A-Za-z]+)`, input.cmd, -1); r := regex.match(`r`, m[1])]"
	_, p, err := fixture(t, src, "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat(" x", 1<<19) // 1 MiB of command
	const n = 64
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		flags := fmt.Sprintf("-r%s", strings.Map(func(r rune) rune { return 'a' + (r - '0') }, fmt.Sprint(i)))
		in := ast.NewObject(ast.Item(ast.StringTerm("cmd"), ast.StringTerm("rm "+flags+" /tmp/y"+pad)))
		if _, err := p.Eval(context.Background(), in, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("answers kept %d, key bytes counted %d", len(p.matches.m), p.matches.bytes)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("%d MiB kept alive by %d remembered answers (%d key bytes counted)", grew>>20, len(p.matches.m), p.matches.bytes)
	}
	runtime.KeepAlive(p)
}

// canceled evaluates src's x on in with a context already ended, and
// fails unless it ends with the context's error, having allocated at most
// 64 MiB.
func canceled(t *testing.T, src string, in ast.Value) {
	t.Helper()
	_, p, err := fixture(t, src, "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v, err := p.Eval(ctx, in, Options{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%q: %v, %v: want the context's error", src, v, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("%q: %d MiB allocated after the context ended", src, grew>>20)
	}
}

// bigObject is {"k0": 0, ...} of n keys, as JSON.
func bigObject(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d": %d`, i, i)
	}
	b.WriteString("}")
	return b.String()
}

// A statement's cost is not known before it runs: a custom policy that
// names the arguments in its message, in a loop over them, formats all of
// them once a pass (sprintf of a value whose top level is small). The
// plan stops at the first statement after its context ends: when work was
// only counted, hundreds of passes ran first (298 to 910 MiB).
func TestNestedWorkEndsWithTheContext(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"tool": "ctx_edit", "arguments": {"files": [`)
	for i := range 20_000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/etc/f%d"`, i)
	}
	b.WriteString(`], "options": ` + bigObject(20_000) + `}}`)
	in := jsonInput(t, b.String())
	const head = "package t\nx := count(deny)\ndeny contains msg if {\n\tsome f in input.arguments.files\n\tnot startswith(f, \"/proj/\")\n"
	for _, src := range []string{
		head + "\tmsg := sprintf(\"%s: %s is outside the project (%v)\", [input.tool, f, input.arguments])\n}",
		head + "\tmsg := sprintf(\"%s %s\", [f, json.marshal(input.arguments)])\n}",
		head + "\tmsg := object.union({\"options\": {\"x\": 1}}, input.arguments)\n}",
	} {
		canceled(t, src, in)
	}
}

// An evaluation its caller stops (Options.Stop and Cancel, set when the
// caller's own bounds end) ends as one whose context ended: at the first
// statement after the flag, and in built-ins that watch the Cancel. Its
// error is ErrStopped while ctx has not ended (a built-in's own, when the
// Cancel stopped it), ctx's error once it has.
func TestEvalEndsWhenStopped(t *testing.T) {
	loop := "package t\nx := count([1 | some i in input.xs; some j in input.xs; i == j + 3001])"
	xs := make([]*ast.Term, 3000)
	for i := range xs {
		xs[i] = ast.IntNumberTerm(i)
	}
	in := ast.NewObject(ast.Item(ast.StringTerm("xs"), ast.ArrayTerm(xs...)))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	errAny := errors.New("any error")
	for _, tt := range []struct {
		name, src string
		ctx       context.Context
		stopFirst bool // the flag set before the evaluation starts
		want      error
	}{
		{"a loop, stopped before", loop, context.Background(), true, ErrStopped},
		{"a loop, stopped while it runs", loop, context.Background(), false, ErrStopped},
		{"a built-in, stopped while it runs", "package t\nx := count(numbers.range(1, 100000000))", context.Background(), false, errAny},
		{"a loop, its context ended too", loop, ended, true, context.Canceled},
		{"a constant, never stopped", "package t\nx := 1", context.Background(), false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, p, err := fixture(t, tt.src, "data.t.x")
			if err != nil {
				t.Fatal(err)
			}
			var stop atomic.Bool
			c := topdown.NewCancel()
			if tt.stopFirst {
				stop.Store(true)
				c.Cancel()
			} else if tt.want != nil {
				timer := time.AfterFunc(50*time.Millisecond, func() { stop.Store(true); c.Cancel() })
				defer timer.Stop()
			}
			v, err := p.Eval(tt.ctx, in, Options{Stop: &stop, Cancel: c})
			switch {
			case tt.want == nil && (err != nil || v == nil):
				t.Errorf("%v, %v: want a value", v, err)
			case tt.want == errAny && err == nil:
				t.Errorf("%v: want an error", v)
			case tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
				t.Errorf("%v, %v: want %v", v, err, tt.want)
			}
		})
	}
}
