package policy

import (
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// reads is what a set of modules reads of the input, found in the compiled
// modules themselves: the top-level keys of input that some reference
// names (input.tool, input["tool"], object.get(input, "tool", d)), and
// whether anything reads more than named keys: the input whole or by a
// computed key (input[k], walk(input, ...), json.filter(input, ...)), or a
// document of the harness's own rules, which are computed from the input
// (a custom policy that reads data.harness.budget reads the usage). The
// decision cache keys a decision by these.
type reads struct {
	keys map[string]bool
	all  bool
	// nondeterministic is set when a module calls a built-in whose result
	// is not a function of its arguments (time.now_ns, rand.intn,
	// uuid.rfc4122, a certificate's verification...), or names one in a
	// with: such a policy's decisions are never cached.
	nondeterministic bool
}

// baseData are the documents under data.harness that the compiler writes
// (the bundle's data.json): reading them reads no input.
var baseData = []string{"schema_version", "config", "roles", "ceiling", "agents"}

// readsOf finds what modules read. customOnly limits references to data to
// those a custom policy may make without reading the input indirectly: the
// compiled data and the custom policies (which are analysed themselves).
func readsOf(modules []*ast.Module, customOnly bool) reads {
	r := reads{keys: map[string]bool{}}
	for _, m := range modules {
		ast.WalkTerms(m, func(t *ast.Term) bool {
			switch v := t.Value.(type) {
			case ast.Call:
				r.call(v)
			case ast.Ref:
				r.ref(v, customOnly)
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if e.IsCall() {
				r.builtin(e.Operator())
			}
			return false
		})
	}
	return r
}

// call notes a built-in call in a term (a call nested in an expression).
func (r *reads) call(c ast.Call) {
	if ref, ok := c[0].Value.(ast.Ref); ok {
		r.builtin(ref)
	}
}

// builtin notes a call of the built-in (or function) named by ref.
func (r *reads) builtin(ref ast.Ref) {
	if ref == nil {
		return
	}
	if b, ok := ast.BuiltinMap[ref.String()]; ok && variesAlone(b) {
		r.nondeterministic = true
	}
}

// ref notes what a reference reads.
func (r *reads) ref(ref ast.Ref, customOnly bool) {
	// A built-in named other than as a call's operator is the value of a
	// with: it is called in place of the function the with replaces.
	r.builtin(ref)
	switch {
	case ref.HasPrefix(ast.InputRootRef):
		if len(ref) < 2 {
			r.all = true
			return
		}
		key, ok := ref[1].Value.(ast.String)
		if !ok {
			r.all = true
			return
		}
		r.keys[string(key)] = true
	case customOnly && ref.HasPrefix(ast.DefaultRootRef):
		if !dataWithoutInput(ref) {
			r.all = true
		}
	}
}

// dataWithoutInput reports whether ref, under data, names compiled data or
// a custom policy's document only.
func dataWithoutInput(ref ast.Ref) bool {
	if len(ref) < 3 {
		return false
	}
	pkg, ok1 := ref[1].Value.(ast.String)
	doc, ok2 := ref[2].Value.(ast.String)
	if !ok1 || !ok2 || pkg != "harness" {
		return false
	}
	return slices.Contains(baseData, string(doc)) || doc == "custom"
}

// inputReads finds what modules read of the input, with object.get(input,
// "key", default) counted as a read of key and of what the default reads
// (it is the value when the key is absent, as input.agent_budget may be):
// the one way the harness's own policy reads a key that may be absent.
// Every other appearance of input alone reads all of it.
func inputReads(modules []*ast.Module, customOnly bool) reads {
	// object.get(input, "key", d) is rewritten, for the analysis only, as
	// [input.key, d]: a copy of each module is walked.
	copies := make([]*ast.Module, len(modules))
	for i, m := range modules {
		c := m.Copy()
		ast.WalkTerms(c, func(t *ast.Term) bool {
			call, ok := t.Value.(ast.Call)
			if ok && objectGetOfInput(call[0], call[1:]) {
				t.Value = readOf(call[2], call[3])
			}
			return false
		})
		ast.WalkExprs(c, func(e *ast.Expr) bool {
			if terms, ok := e.Terms.([]*ast.Term); ok && len(terms) > 0 && objectGetOfInput(terms[0], terms[1:]) {
				// The call as an expression: its output, if any, is its last
				// operand; the read becomes an equality with it.
				out := ast.NullTerm()
				if len(terms) == 5 {
					out = terms[4]
				}
				e.Terms = ast.Equality.Expr(ast.NewTerm(readOf(terms[2], terms[3])), out).Terms
			}
			return false
		})
		copies[i] = c
	}
	return readsOf(copies, customOnly)
}

// readOf is what object.get(input, key, def) reads, as a term the analysis
// walks: input.key, and def.
func readOf(key, def *ast.Term) ast.Value {
	return ast.NewArray(ast.NewTerm(ast.InputRootRef.Append(key)), def)
}

// objectGetOfInput reports whether op(args) is object.get(input, "key", d).
func objectGetOfInput(op *ast.Term, args []*ast.Term) bool {
	ref, ok := op.Value.(ast.Ref)
	if !ok || ref.String() != "object.get" || len(args) < 3 {
		return false
	}
	in, ok := args[0].Value.(ast.Ref)
	if !ok || !in.Equal(ast.InputRootRef) {
		return false
	}
	_, ok = args[1].Value.(ast.String)
	return ok
}

// sortedKeys are the keys read, sorted (for messages and tests).
func (r reads) sortedKeys() []string {
	out := make([]string, 0, len(r.keys))
	for k := range r.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// String describes r.
func (r reads) String() string {
	s := "input." + strings.Join(r.sortedKeys(), ", input.")
	if r.all {
		s += ", and input as a whole"
	}
	return s
}
