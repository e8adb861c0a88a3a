package plan

import (
	"errors"
	"strings"
	"testing"
)

// withCases are policies with with in unusual places (found attacking the
// plan's with): on the input at every depth, overlapping, repeated, in
// loops, every, not, else chains, functions and comprehensions, with
// mocks of functions and built-ins, and on data (which the plan refuses).
var withCases = []struct {
	name, src string
	inputs    []string
}{
	{"B with replacing a rule", `package t
y := input.a
z := y + 1
x := [[v | v := z with data.t.y as input.v], z]`, []string{`{"a": 1, "v": 10}`, `{"v": 1}`, `{"a": 1}`}},
	{"C with on a package prefix", `package t
sub.y := input.a
sub.w := 2
x := [[v | v := data.t.sub with data.t.sub as {"y": 5}], [v | v := data.t.sub.w with data.t.sub as {"y": 5}], data.t.sub]`, []string{`{"a": 1}`, `{}`}},
	{"C2 with below a ref-head rule package", `package t
sub.y := input.a
sub.w := 2
x := [[v | v := data.t.sub with data.t.sub.y as 5], [v | v := data.t.sub with data.t.sub.q as 7]]`, []string{`{"a": 1}`, `{}`}},
	{"D data base with through non-object", `package t
x := [[v | v := data.t.lists with data.t.lists.a as 5], [v | v := data.t.half with data.t.half.x as 1], [v | v := data.t.roles with data.t.roles.coder.limit.x as 1], [v | v := data.t.roles.coder.limit with data.t.roles.coder.limit.x as 1]]`, []string{`{}`}},
	{"D2 overlapping data withs", `package t
x := [[v | v := data.t.roles with data.t.roles.coder as 1 with data.t.roles.coder.limit as 2],
      [v | v := data.t.roles with data.t.roles.coder.limit as 2 with data.t.roles.coder as 1],
      [v | v := data.t.roles with data.t.roles as {"x": 1} with data.t.roles.coder.limit as 99],
      [v | v := data.t.roles.reviewer with data.t.roles as {"x": 1} with data.t.roles.coder.limit as 99],
      [v | v := data.t.roles with data.t.roles.coder.limit as 99 with data.t.roles as {"x": 1}]]`, []string{`{}`}},
	{"D3 data with of an object merged by topdown", `package t
x := [[v | v := data.t.roles with data.t.roles.coder as {"x": 1}],
      [v | v := data.t.roles with data.t.roles.coder as {}],
      [v | v := data.t.roles.coder with data.t.roles.coder as {}],
      [k | some k; data.t.roles.coder[k] with data.t.roles.coder as {"x": 1}],
      [v | v := data.t.roles with data.t.roles.coder as input]]`, []string{`{}`, `{"allowed": 1}`, `[]`}},
	{"D4 data with in a rule, read above", `package t
all := data.t.roles
limit := data.t.roles[input.role].limit
deny if data.t.roles.reviewer.limit > 2
x := [[v | v := all with data.t.roles.coder as {"limit": 0}], [v | v := deny with data.t.roles.reviewer as {"allowed": []}], [v | v := limit with data.t.roles.coder as {"allowed": []}], [v | v := limit with data.t.roles as {"coder": {"allowed": []}}]]`, []string{`{}`, `{"role": "coder"}`}},
	{"D5 iteration over data with an overlay", `package t
x := [[[r, l] | some r; l := data.t.roles[r].limit with data.t.roles.coder as {"x": 1}],
      [[r, l] | some r; l := data.t.roles[r].limit with data.t.roles.coder.x as 1],
      [[r, k] | some r, k; data.t.roles[r][k] with data.t.roles.coder as {"x": 1}],
      [[r, k] | some r, k; data.t.roles[r][k] with data.t.roles as {"coder": {"x": 1}}]]`, []string{`{}`}},
	{"X every and some under with", `package t
pos if every v in input.l { v > 0 } with input.l as [1, 2]
pos2 if every v in input.l { v > input.m } with input.m as 0
x := [pos, pos2, [v | some v in input.l with input.l as [1, 2]], [[v, w] | some v in input.l; some w in input.l with input.l as [v]]]`,
		[]string{`{"l": [-1]}`, `{"l": [1, 3]}`, `{}`, `{"l": "s"}`, `{"l": {"a": 5}}`}},
	{"Y replaced rule with default, function and builtin mocks", `package t
default y := 0
y := input.a
z := y
twice(v) := v * 2
w := twice(input.n)
u := lower(input.s)
up(s) := concat("", [s, s])
x := [[v | v := z with data.t.y as 5], [v | v := w with data.t.twice as 7], [v | v := u with lower as upper], [v | v := u with lower as input.s2], [v | v := u with lower as up], z, w, u, [v | v := z with y as 6]]`,
		[]string{`{"a": 1, "n": 2, "s": "Ab", "s2": "q"}`, `{"n": "x", "s": 1}`, `{}`}},
	{"Z same target twice", `package t
x := [[v | v := input.a with input.a as 1 with input.a as 2], [v | v := input with input.a.b as 1 with input.a.c as 2], [v | v := input with input.a.b as 1 with input.a.b.c as 2 with input.a as {"z": 0} with input.a.d as 3]]`,
		[]string{`{}`, `{"a": {"b": {"c": 9, "e": 1}, "f": 2}}`, `{"a": 5}`}},
	{"S partial set and object rules replaced", `package t
s contains v if some v in input.l
o[k] := v if some k, v in input.o
n := count(s) + count(o)
x := [[v | v := n with data.t.s as {1, 2, 3}], [v | v := n with data.t.o as "abcd"], [v | v := n with data.t.s as 5], n, [v | v := n with input.l as [7]]]`,
		[]string{`{"l": [1, 1, 2], "o": {"a": 1}}`, `{}`, `{"l": "s"}`}},
	{"DUP input object with a duplicate key (only from ast.ParseTerm, not JSON)", `package t
x := [v | v := input with input.s.t as 4]`, []string{`{"s": {"a": 1, "a": {}}}`}},
	{"R relation, object comprehension and conflicts under with", `package t
y := input.a
o := {k: v | some k in input.ks; v := y with input.a as k}
c := v if { v := y with input.a as 1 }
c := v if { v := y with input.a as input.b }
x := [[p | walk(input, [p, "s"]) with input as {"a": ["s", {"b": "s"}]}], o, c, [v | v := o with input.ks as ["p", "q"]]]`,
		[]string{`{"ks": ["a", "b"], "b": 1}`, `{"ks": ["a", "a"], "b": 2}`, `{"ks": "ab"}`, `{}`}},
	{"E input non-object", `package t
x := [[v | v := input with input.a.b as 1], [v | v := input.a with input as 5], [v | v := input with input.a as input], [v | v := input.a.b.c with input.a.b.c as input.a]]`,
		[]string{`"x"`, `[]`, `null`, `{"a": 1}`, `{"a": {"b": [1]}}`, `{"a": {"b": {"c": 2, "d": 3}}}`, `1`, `{"a": {"b": "s"}}`}},
	{"M overlapping input withs", `package t
x := [[v | v := input with input.a as 1 with input.a.b as 2], [v | v := input with input.a.b as 2 with input.a as 1], [v | v := input with input.a as {"c": 1} with input.a.b as 2], [v | v := input with input as 3 with input.a as 4], [v | v := input with input.a as 4 with input as 3]]`,
		[]string{`{}`, `{"a": {"b": 0, "d": 1}}`, `[]`}},
	{"G mocks and memos", `package t
twice(v) := v * 2
g := twice(input.n)
size(_) := 42
h := count(input.l)
x := [g, [v | v := g with twice as 5], g, h, [v | v := h with count as size], [v | v := h with count as 7], h, [v | v := g with input.n as 4], g]`,
		[]string{`{"n": 1, "l": [1]}`, `{"n": "a", "l": 3}`}},
	{"T mock with var", `package t
twice(v) := v * 2
g := twice(input.n)
x := [[v | some n in [1, 2]; v := g with twice as n], g, [v | some n in [1, 2]; v := [g, input.n] with twice as n with input.n as n]]`,
		[]string{`{"n": 1}`, `{}`}},
	{"H with inside every", `package t
y := input.a
ok if every v in input.l { y == v with input.a as v }
bad if every v in input.l { y == 1 with input.a as v }
x := [ok, bad]`, []string{`{"l": [1, 2]}`, `{"l": [1]}`, `{"l": []}`, `{"l": {"k": 1}}`, `{"l": "s"}`, `{}`}},
	{"I with in else chain", `package t
y := input.a
z := 1 if { y == 2 with input.a as input.b } else := 2 if { y == 3 with input.a as input.c } else := 3
x := [z, [v | v := z with input.b as 2], [v | v := z with input.b as 7 with input.c as 3]]`, []string{`{"b": 2}`, `{"c": 3}`, `{}`, `{"b": 1, "c": 3, "a": 2}`}},
	{"K with in function bodies", `package t
y := input.a
f(v) := r if { r := y with input.a as v }
f2(v) := r if { r := y with input.a as v; r > 1 }
f2(v) := 0 if { y with input.a as v; v <= 1 }
x := [f(1), f(input.z), f2(5), f2(0), y]`, []string{`{"a": 9, "z": 3}`, `{}`}},
	{"L with values sets and arrays", `package t
x := [[v | v := input.a with input.a as {1, 2}], [v | v := input.a.b with input.a.b as [1]], [v | v := input with input.a.b as {"k": {1}}], [v | v := count(input.a) with input.a as {1, 1, 2}]]`, []string{`{}`, `{"a": {"b": 1}}`}},
	{"O with in loops and memo", `package t
y := input.a
x := [y, [v | some i in [1, 2, 3]; v := y with input.a as i], y, [v | some i in input.l; v := [y, input.a] with input.a as i]]`,
		[]string{`{"a": 0, "l": [4, 5]}`, `{"l": {"p": 1}}`}},
	{"Q default rule under with", `package t
default d := 0
d := 1 if input.a
s contains v if some v in input.l
x := [d, [v | v := d with input.a as true], d, [v | v := s with input.l as [1, 2]], s, [v | v := d with input as "x"]]`, []string{`{"l": [3]}`, `{"a": true}`, `{}`}},
	{"W nested rule withs", `package t
y := input.a
y2 := v if { v := y with input.a as input.a2 }
y3 := v if { v := y2 with input.a2 as input.a3 }
x := [y, y2, y3, [v | v := y3 with input.a3 as 7], [v | v := y2 with input as {"a2": 8}]]`, []string{`{"a": 1, "a2": 2, "a3": 3}`, `{}`}},
	{"N not with", `package t
y := input.a
x := [1 | not y with input.a as false; not y == 1 with input.a as 2; y]`, []string{`{"a": 1}`, `{}`}},
	{"V data whole with", `package t
y := data.t.roles.coder.limit
x := [[v | v := y with data.t.roles as {"coder": {"limit": input.n}}], [v | v := y with data.t.roles.coder as input], y]`, []string{`{"n": 3, "limit": 8}`, `{}`}},
}

// refusedWith are the with cases the plan refuses (so topdown evaluates
// them): a with on data, and T, where OPA's planner, under a mock by a
// variable, puts a with on the input on the data's local (and restores
// the input's): planned, input.n would read the input unchanged.
var refusedWith = map[string]bool{"B": true, "C": true, "C2": true, "D": true, "D2": true, "D3": true, "D4": true,
	"D5": true, "S": true, "V": true, "Y": true, "T": true}

// Each with case is planned and agrees with topdown, or is refused where
// refusedWith says.
func TestWithAgreesWithTopdown(t *testing.T) {
	for _, tt := range withCases {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := fixture(t, tt.src, "data.t.x")
			switch refused := refusedWith[strings.Fields(tt.name)[0]]; {
			case err == nil && !refused:
				agree(t, tt.src, "data.t.x", tt.inputs)
			case err == nil:
				t.Error("planned, want it refused")
			case !errors.Is(err, ErrUnsupported):
				t.Fatal(err)
			case !refused:
				t.Errorf("refused: %v", err)
			}
		})
	}
}
