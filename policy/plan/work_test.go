package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// opas is OPA's own answer to a call of built-in name: its value's
// spelling, or "error".
func opas(t testing.TB, name string, args []*ast.Term) string {
	t.Helper()
	var out *ast.Term
	err := topdown.GetBuiltin(name)(topdown.BuiltinContext{Context: context.Background()}, args, func(v *ast.Term) error {
		out = v
		return nil
	})
	if err != nil {
		return "error"
	}
	return out.String()
}

// number is raw as a term: a number spelled as written, else a string.
func number(raw string) *ast.Term {
	if _, err := ast.ParseTerm(raw); err == nil {
		if n, ok := ast.MustParseTerm(raw).Value.(ast.Number); ok {
			return ast.NewTerm(n)
		}
	}
	return ast.StringTerm(raw)
}

func TestShortcutsAreOPAs(t *testing.T) {
	for _, tt := range []struct {
		name, x, y string
		short      bool // the shortcut answers it
	}{
		{"div", "0", "1", true},
		{"div", "0", "7", true},
		{"div", "0", "100", true},
		{"div", "0", "2147483647", true},
		{"div", "0", "2147483648", false}, // OPA divides it as floats: its answer
		{"div", "0", "-1", false},         // -0
		{"div", "-0", "5", false},         // -0
		{"div", "0.0", "5", false},
		{"div", "0e3", "5", false},
		{"div", "0", "0", false}, // OPA's error
		{"div", "0", "0.5", false},
		{"div", "0", "1e2", false},
		{"div", "0", "5.0", true}, // OPA reads 5.0 as the integer 5 too
		{"div", "6", "3", false},
		{"div", "7", "2", false},
		{"div", "0", `"5"`, false}, // a string: OPA's type error
		{"div", `"0"`, "5", false},
		{"minus", "1000000000000", "42", true}, // past the int32 window: OPA's big.Int
		{"minus", "5", "7", true},
		{"minus", "-9223372036854775808", "1", false}, // overflows
		{"minus", "9223372036854775807", "-1", false},
		{"minus", "0", "-9223372036854775808", false},
		{"minus", "007", "1", false}, // not a JSON number: OPA answers
		{"minus", "-0", "0", true},
		{"minus", "5.0", "1", true}, // OPA reads 5.0 as the integer 5
		{"minus", "1e3", "1", false},
		{"minus", "0.5", "1", false},
		{"minus", `"5"`, "1", false},
		{"plus", "9223372036854775807", "1", false},
		{"plus", "-9223372036854775808", "-1", false},
		{"plus", "4000000000", "4000000000", true},
		{"plus", "-3", "3", true},
		{"mul", "3037000500", "3037000500", false}, // past int64
		{"mul", "-9223372036854775808", "-1", false},
		{"mul", "-1", "-9223372036854775808", false},
		{"mul", "1000000", "5000", true},
		{"mul", "0", "-9223372036854775808", true},
		{"mul", "-7", "6", true},
	} {
		args := []*ast.Term{number(tt.x), number(tt.y)}
		got := shortcuts[tt.name](args)
		if (got != nil) != tt.short {
			t.Errorf("%s(%s, %s): shortcut %v, want it %v", tt.name, tt.x, tt.y, got, tt.short)
			continue
		}
		if want := opas(t, tt.name, args); got != nil && got.String() != want {
			t.Errorf("%s(%s, %s) = %s, OPA's %s", tt.name, tt.x, tt.y, got, want)
		}
	}
}

// A shortcut's every answer is OPA's, to the spelling of its number.
func FuzzShortcutsAreOPAs(f *testing.F) {
	for _, s := range [][2]string{{"0", "5"}, {"-0", "5"}, {"0", "-5"}, {"0", "2147483647"}, {"0", "0"}, {"0.0", "3"}, {"1", "3"},
		{"9223372036854775807", "1"}, {"-9223372036854775808", "-1"}, {"1000000000000", "123"}, {"3037000500", "3037000499"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		args := []*ast.Term{number(x), number(y)}
		for name, short := range shortcuts {
			if got := short(args); got != nil {
				if want := opas(t, name, args); got.String() != want {
					t.Fatalf("%s(%s, %s) = %s, OPA's %s", name, x, y, got, want)
				}
			}
		}
	})
}

// The shortcuts are the plan's: a program that divides calls them.
func TestPlanTakesTheShortcuts(t *testing.T) {
	_, p, err := fixture(t, "package t\nx := input.a / input.b", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range p.funcs {
		for _, b := range f.blocks {
			found = found || usesShortcut(b)
		}
	}
	for _, b := range p.blocks {
		found = found || usesShortcut(b)
	}
	if !found {
		t.Fatal("no call of div in the plan has its shortcut")
	}
}

func usesShortcut(b *block) bool {
	found := false
	forEach(b, func(s *stmt) {
		found = found || (s.kind == kCallBuiltin && s.bi.name == "div" && s.bi.short != nil)
	})
	return found
}

// The literals of constants a plan never changes (empty sets, arrays and
// objects, sets, arrays and objects of constants) are values made once
// and shared by every evaluation; those it changes are made each time. A
// change to a shared value fails the evaluation instead.
func TestConstantsAreShared(t *testing.T) {
	for _, tt := range []struct {
		name, src    string
		shared, made int // literals shared; arrays, sets and objects still made
	}{
		{"empty sets, one added to", "package t\ns contains 1 if input.a\nx if { s != set(); input.b != set() }", 2, 1},
		{"a set of constants", `package t
x if input.a in {"p", "q", 3}`, 1, 0},
		{"a set of constants and a local", `package t
x if input.a in {"p", input.b}`, 0, 1},
		{"empty arrays, one appended to", "package t\na := [y | some y in input.l]\nx if { a != []; input.b != [] }", 2, 1},
		{"an array of constants", `package t
x := sprintf("%s %d", ["a", 1]) if input.a`, 1, 0},
		{"an array of constants and a local", `package t
x := sprintf("%s %d", ["a", input.n]) if input.a`, 0, 1},
		{"empty objects, one inserted into", "package t\no[k] := 1 if some k in input.l\nx if { o != {}; object.get(input, \"b\", {}) != {} }", 3, 1},
		{"an object of constants", `package t
x := object.union({"a": 0, "b": "c"}, input.o)`, 1, 0},
		{"an object of constants and a local", `package t
x := object.union({"a": 0, "b": input.c}, input.o)`, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, p, err := fixture(t, tt.src, "data.t.x")
			if err != nil {
				t.Fatal(err)
			}
			made, shared := 0, 0
			count := func(s *stmt) {
				switch {
				case s.kind == kMakeSet || s.kind == kMakeArray || s.kind == kMakeArrayItems ||
					s.kind == kMakeObject || s.kind == kMakeObjectItems:
					made++
				case s.kind == kAssignVar && s.a < 0 && p.shared[p.consts[-1-s.a].Value]:
					shared++
				}
			}
			for _, f := range p.funcs {
				for _, b := range f.blocks {
					forEach(b, count)
				}
			}
			for _, b := range p.blocks {
				forEach(b, count)
			}
			if made != tt.made || shared != tt.shared {
				t.Fatalf("%d literals made (want %d), %d shared (want %d)", made, tt.made, shared, tt.shared)
			}
		})
	}

	// A plan that changes a local given a shared value (none OPA plans)
	// fails, and leaves the value as it was.
	for _, v := range []ast.Value{ast.NewSet(), ast.NewArray(ast.StringTerm("a")), ast.NewObject()} {
		bad := &Program{consts: []*ast.Term{ast.NewTerm(v), ast.IntNumberTerm(1)}, shared: map[ast.Value]bool{v: true}, locals: 3}
		change := stmt{kind: kSetAdd, a: -2, b: 2}
		switch v.(type) {
		case *ast.Array:
			change.kind = kArrayAppend
		case ast.Object:
			change = stmt{kind: kObjectInsert, a: -2, c: -2, b: 2}
		}
		bad.blocks = []*block{{stmts: []stmt{{kind: kAssignVar, a: -1, b: 2}, change}}}
		if _, err := bad.Eval(context.Background(), ast.NewObject(), Options{}); !errors.Is(err, errShared) {
			t.Fatalf("a change to the shared %v: %v, want %v", v, err, errShared)
		}
		if got := bad.consts[0].Value; got.Compare(v) != 0 || got.(interface{ Len() int }).Len() != v.(interface{ Len() int }).Len() {
			t.Fatalf("the shared value is %v", got)
		}
	}
}

// Options.Steps counts the statements an evaluation runs: more for an
// input that takes a longer way, added up across evaluations.
func TestStepsAreCounted(t *testing.T) {
	_, p, err := fixture(t, "package t\nx := 1 if { input.a; input.b; input.c }", "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	count := func(raw string) int64 {
		in, _ := document(raw)
		var n int64
		if _, err := p.Eval(context.Background(), in, Options{Steps: &n}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	short, long := count(`{"a": false}`), count(`{"a": true, "b": true, "c": true}`)
	if short <= 0 || long <= short {
		t.Fatalf("%d statements for a call that stops at once, %d for one that goes on", short, long)
	}
	var n int64
	in, _ := document(`{"a": false}`)
	for range 3 {
		p.Eval(context.Background(), in, Options{Steps: &n})
	}
	if n != 3*short {
		t.Fatalf("three evaluations: %d statements, want %d", n, 3*short)
	}
}

// The rules of the data alone are found (readsData; not one that reads
// the clock), and their values, worked out by one evaluation, are kept
// for the next, which runs fewer statements for the same value; an error
// is not kept.
func TestDataRulesAreKept(t *testing.T) {
	_, p, err := fixture(t, `package t
d := data.t.lists
i := input.a
di := [d, 1]
mi := [d, i]
w := [v | v := d with input.a as 1]
bad := 1 if data.t.half
bad := 2 if data.t.half
clock := crypto.x509.parse_and_verify_certificates("not a certificate")
x := [di, mi, w, [b | input.bad; b := bad], clock]`, "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"d": true, "i": false, "di": true, "mi": false, "w": false, "bad": true, "clock": false, "x": false}
	for _, fn := range p.funcs {
		name := fn.name[strings.LastIndex(fn.name, ".")+1:]
		if w, ok := want[name]; ok && fn.dataOnly != w {
			t.Errorf("%s: of the data alone %v, want %v", fn.name, fn.dataOnly, w)
		}
	}
	eval := func(raw string) (string, int64) {
		var n int64
		v, err := p.Eval(context.Background(), ast.MustParseTerm(raw).Value, Options{Steps: &n})
		return outcome(v, err), n
	}
	first, n1 := eval(`{"a": 2}`)
	second, n2 := eval(`{"a": 2}`)
	if first != second || n2 >= n1 {
		t.Fatalf("first %s in %d statements, second %s in %d: want the same value in fewer", first, n1, second, n2)
	}
	if first != `[[[1, 2, 3], 1], [[1, 2, 3], 2], [[1, 2, 3]], [], [false, []]]` {
		t.Fatalf("value %s", first)
	}
	for range 2 {
		if got, _ := eval(`{"a": 2, "bad": true}`); !strings.Contains(got, "error") {
			t.Fatalf("a conflict of the data alone: %s, want an error each time", got)
		}
	}
}

// A large value of a rule of the data alone is not kept (it would never
// be given back), and is worked out again by every evaluation, which
// gives the same value; a small one is kept, as a copy of its own, and
// undefined is.
func TestKeptValuesAreSmall(t *testing.T) {
	_, p, err := fixture(t, `package t
big := numbers.range(1, 20000)
words := concat("", [w | some _ in numbers.range(1, 2000); w := "0123456789abcdefghijklmnopqrstuvwxyz"])
few := numbers.range(1, 100)
none if data.t.nope
x := [count(big), count(words), count(few), [1 | none]] if input.a
x := [count(big), count(words), count(few)] if not input.a`, "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{}`, `{"a": true}`, `{}`} {
		v, err := p.Eval(context.Background(), ast.MustParseTerm(in).Value, Options{})
		if err != nil || v == nil || v.(*ast.Array).Elem(0).Value.Compare(ast.Number("20000")) != 0 {
			t.Fatalf("%s: %v, %v", in, v, err)
		}
	}
	kept := map[string]bool{}
	for _, fn := range p.funcs {
		if fn.dataOnly {
			v := p.kept[fn.index].Load()
			kept[fn.name[strings.LastIndex(fn.name, ".")+1:]] = v != nil && v != tooLarge
		}
	}
	want := map[string]bool{"big": false, "words": false, "few": true, "none": true}
	for name, w := range want {
		if got, ok := kept[name]; !ok || got != w {
			t.Errorf("%s: kept %v (a rule of the data alone: %v), want kept %v", name, got, ok, w)
		}
	}
	for _, v := range []*ast.Term{ast.StringTerm("x"), ast.ArrayTerm(ast.IntNumberTerm(1)), ast.MustParseTerm(`{"a": {1.0, "b"}, "c": [null, true]}`)} {
		if c, _ := keepable(v); c == nil || c.Value.Compare(v.Value) != 0 || c.String() != v.String() {
			t.Errorf("%v: kept as %v", v, c)
		}
	}
	if c, _ := keepable(ast.StringTerm(strings.Repeat("x", maxKept))); c != nil {
		t.Error("a string of maxKept bytes is kept")
	}
	// A string cut from a larger one is kept as a copy of its own, which
	// does not keep the larger one alive.
	large := strings.Repeat("x", 1<<20)
	c, _ := keepable(ast.StringTerm(large[:2]))
	if c == nil || unsafe.StringData(string(c.Value.(ast.String))) == unsafe.StringData(large) {
		t.Error("a string cut from a larger one is kept as a part of it")
	}
}

// However many rules of the data alone a policy has, what their kept
// values measure is bounded: past maxKeptTotal, a rule is worked out by
// every evaluation, and gives the same value.
func TestKeptValuesAreBoundedInAll(t *testing.T) {
	var src strings.Builder
	src.WriteString("package t\n")
	var names []string
	for i := range 60 {
		fmt.Fprintf(&src, "r%d := [x | some x in numbers.range(%d, %d)]\n", i, i*1000, i*1000+400)
		names = append(names, fmt.Sprintf("count(r%d)", i))
	}
	fmt.Fprintf(&src, "x := sum([%s])\n", strings.Join(names, ", "))
	_, p, err := fixture(t, src.String(), "data.t.x")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		v, err := p.Eval(context.Background(), ast.NewObject(), Options{})
		if err != nil || v == nil || v.Compare(ast.Number("24060")) != 0 {
			t.Fatalf("%v, %v; want 24060", v, err)
		}
	}
	kept, large := 0, 0
	for i := range p.kept {
		switch p.kept[i].Load() {
		case nil, undefined:
		case tooLarge:
			large++
		default:
			kept++
		}
	}
	if kept == 0 || large == 0 || p.keptSize.Load() > maxKeptTotal {
		t.Fatalf("%d values kept, %d not (too large in all), measuring %d: want some of each, at most %d", kept, large, p.keptSize.Load(), maxKeptTotal)
	}
}
