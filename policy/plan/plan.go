package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Target is the name under which the package is registered with OPA as a
// target plugin (rego.Target).
const Target = "harness-plan"

func init() { rego.RegisterPlugin(Target, plugin{}) }

// plugin is the target plugin: OPA gives it the plan of a prepared query.
type plugin struct{}

func (plugin) IsTarget(t string) bool { return t == Target }

func (plugin) PrepareForEval(ctx context.Context, p *ir.Policy, _ ...rego.PrepareOption) (rego.TargetPluginEval, error) {
	prog, err := build(p)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(slotKey{}).(*slot); ok {
		slot.prog = prog
	}
	return planned{prog}, nil
}

// slot carries the Program that PrepareForEval built back to Compile,
// which called it through rego (which gives a plugin's result no other
// way out), in the context of that one call.
type slot struct{ prog *Program }

type slotKey struct{}

// ErrUnsupported wraps the reason a plan cannot be interpreted.
var ErrUnsupported = errors.New("plan not supported")

// Compile plans query over the compiled modules of c and the data in store,
// and prepares the plan for [Program.Eval]. The data is read once, now: a
// Program answers on the data it was compiled with. An error wrapping
// [ErrUnsupported] means the query needs what the interpreter does not do.
func Compile(ctx context.Context, c *ast.Compiler, store storage.Store, query string) (*Program, error) {
	out := &slot{}
	_, err := rego.New(
		rego.Query(query),
		rego.Compiler(c),
		rego.Store(store),
		rego.SetRegoVersion(ast.RegoV1),
		rego.Target(Target),
	).PrepareForEval(context.WithValue(ctx, slotKey{}, out))
	if err != nil {
		return nil, err
	}
	prog := out.prog
	if prog == nil {
		return nil, fmt.Errorf("%w: OPA did not hand over the plan", ErrUnsupported)
	}
	data, err := storage.ReadOne(ctx, store, storage.Path{})
	if err != nil {
		return nil, err
	}
	v, ok := data.(ast.Value)
	if !ok {
		if v, err = ast.InterfaceToValue(data); err != nil {
			return nil, err
		}
	}
	prog.data = ast.NewTerm(v)
	return prog, nil
}

// Program is a planned query, ready to evaluate. It is safe for concurrent
// use: every evaluation has its own locals.
type Program struct {
	funcs  []*function
	blocks []*block
	locals int
	consts []*ast.Term
	data   *ast.Term
	// maxArgs is the most arguments a built-in call has, maxItems the
	// most members of an object made at once.
	maxArgs, maxItems int
	matches           matches
	// shared are the values of the constant literals every evaluation
	// shares (see shareConstants): no statement may change them.
	shared map[ast.Value]bool
	// bare: the results are the query's values themselves, not its
	// bindings (see bareResults).
	bare bool
	// kept are the values of the functions of data alone, by index, once
	// an evaluation has worked them out (undefined: the term undefined);
	// keptSize, what they measure in all (see keep).
	kept     []atomic.Pointer[ast.Term]
	keptSize atomic.Int64
}

// Among the kept values, undefined stands for an undefined value and
// tooLarge for one too large to keep (see small), worked out every time.
var undefined, tooLarge = &ast.Term{}, &ast.Term{}

// function is one planned function: a rule, a Rego function, or a part of
// either.
type function struct {
	name   string
	params []int32
	ret    int32
	blocks []*block
	locals int
	// dataOnly: the function reads the data alone, never the input, and
	// its value is kept across evaluations (see readsData).
	dataOnly bool
	// memo: a function of the input and data alone is evaluated once per
	// query, as OPA's Wasm target does; index is its slot.
	memo  bool
	index int
}

type block struct{ stmts []stmt }

// kind is a statement's kind.
type kind uint8

const (
	kArrayAppend kind = iota
	kAssignInt
	kAssignVarOnce
	kAssignVar
	kBlock
	kBreak
	kCallFunc
	kCallBuiltin
	kDot
	kEqual
	kIsArray
	kIsDefined
	kIsObject
	kIsSet
	kIsUndefined
	kLen
	kMakeArray
	kMakeArrayItems
	kMakeNull
	kMakeNumberInt
	kMakeObject
	kMakeObjectItems
	kMakeSet
	kNop
	kNotEqual
	kNot
	kObjectInsertOnce
	kObjectInsert
	kResetLocal
	kResultSetAdd
	kReturnLocal
	kScan
	kSetAdd
	kWith
)

// stmt is a statement with its operands resolved. An operand is a local
// (>= 0) or a constant (-1 - its index in Program.consts).
type stmt struct {
	kind    kind
	a, b, c int32
	n       int64
	fn      *function
	bi      *builtin
	args    []int32
	blocks  []*block
	body    *block
	loc     *ir.Location
	// at is the place of a built-in call, for its errors.
	at *ast.Location
}

// builtin is a built-in function the plan calls: OPA's own implementation.
type builtin struct {
	name     string
	f        topdown.BuiltinFunc
	relation bool
	// memo: its answers are kept across evaluations (see matches).
	memo bool
	// short answers the calls whose answer it knows to be OPA's (see
	// shortcuts); nil, every call is OPA's implementation's.
	short func(args []*ast.Term) *ast.Term
}

// impure are built-ins whose answer depends on more than their arguments
// (besides those OPA marks non-deterministic): they read what only
// topdown's evaluation context has.
var impure = map[string]bool{
	"print": true, "internal.print": true, "trace": true, "opa.runtime": true,
	"rego.metadata.chain": true, "rego.metadata.rule": true, "internal.test_case": true,
}

// planned wraps a Program as OPA's TargetPluginEval; OPA's own Eval of a
// plugin-prepared query is not used by this package, but must exist.
type planned struct{ *Program }

func (p planned) Eval(ctx context.Context, ec *rego.EvalContext, input ast.Value) (ast.Value, error) {
	return nil, fmt.Errorf("%w: evaluate through plan.Program.Eval", ErrUnsupported)
}

// build resolves a plan into a Program.
func build(p *ir.Policy) (*Program, error) {
	if p.Plans == nil || len(p.Plans.Plans) != 1 {
		return nil, fmt.Errorf("%w: want one plan", ErrUnsupported)
	}
	b := &builder{prog: &Program{}, funcs: map[string]*function{}, builtins: map[string]*builtin{}, numbers: map[int]int32{}, literals: map[string]int32{}}
	for _, s := range p.Static.Strings {
		b.prog.consts = append(b.prog.consts, ast.StringTerm(s.Value))
	}
	b.strings = p.Static.Strings
	b.files = p.Static.Files
	b.prog.consts = append(b.prog.consts, ast.BooleanTerm(false), ast.BooleanTerm(true))
	for _, d := range p.Static.BuiltinFuncs {
		decl, ok := ast.BuiltinMap[d.Name]
		f := topdown.GetBuiltin(d.Name)
		if !ok || f == nil || decl.Nondeterministic || impure[d.Name] {
			return nil, fmt.Errorf("%w: built-in %s", ErrUnsupported, d.Name)
		}
		b.builtins[d.Name] = &builtin{name: d.Name, f: f, relation: decl.Relation, memo: memoised[d.Name], short: shortcuts[d.Name]}
	}
	if p.Funcs != nil {
		for i, f := range p.Funcs.Funcs {
			fn := &function{name: f.Name, ret: int32(f.Return), index: i, memo: len(f.Params) == 2}
			for _, l := range f.Params {
				fn.params = append(fn.params, int32(l))
			}
			b.funcs[f.Name] = fn
			b.prog.funcs = append(b.prog.funcs, fn)
		}
		for i, f := range p.Funcs.Funcs {
			fn := b.prog.funcs[i]
			b.max = int(f.Return)
			for _, l := range f.Params {
				b.max = max(b.max, int(l))
			}
			for _, bl := range f.Blocks {
				rb, err := b.block(bl)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Name, err)
				}
				fn.blocks = append(fn.blocks, rb)
			}
			fn.locals = b.max + 1
			b.shareConstants(fn.blocks)
			dropCopies(fn.blocks, append([]int32{int32(ir.Input), int32(ir.Data), fn.ret}, fn.params...))
			dropNops(fn.blocks)
		}
	}
	b.max = int(ir.Data)
	for _, bl := range p.Plans.Plans[0].Blocks {
		rb, err := b.block(bl)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		b.prog.blocks = append(b.prog.blocks, rb)
	}
	b.prog.locals = b.max + 1
	readsData(b.prog.funcs)
	b.prog.kept = make([]atomic.Pointer[ast.Term], len(b.prog.funcs))
	bareResults(b.prog)
	b.shareConstants(b.prog.blocks)
	dropCopies(b.prog.blocks, []int32{int32(ir.Input), int32(ir.Data)})
	dropNops(b.prog.blocks)
	return b.prog, nil
}

// shareConstants makes each literal of constants that a function
// (blocks) makes, and never changes, one value made once, where the plan
// makes it anew each time: an empty array ([]), set (set()) or object
// ({}), or an array, set or object of constants (["a", "b"], {"a", 1},
// {"a": 0}). Its making becomes an assignment of the shared value. A
// literal is shared when the local it is made in is never appended, added
// or inserted to in the function, other than by the adds of the members
// of the set literals made in it, each right after its literal (the
// bodies of a function may make their literals in one local). Should a
// statement still change a shared value (another local given it first),
// it fails the evaluation (see kArrayAppend, kSetAdd, kObjectInsert),
// whose caller then asks topdown.
func (b *builder) shareConstants(blocks []*block) {
	changed := map[int32]int{} // adds, appends and inserts, by the local they change
	for _, bl := range blocks {
		forEach(bl, func(s *stmt) {
			switch s.kind {
			case kSetAdd, kArrayAppend, kObjectInsert, kObjectInsertOnce:
				changed[s.b]++
			}
		})
	}
	// The adds of each set literal's members, taken off the changes of
	// its local.
	members := map[*stmt][]int{}
	for _, bl := range blocks {
		eachStmt(bl, func(stmts []stmt, i int) {
			if s := &stmts[i]; s.kind == kMakeSet {
				members[s] = setMembers(stmts, i)
				changed[s.b] -= len(members[s])
			}
		})
	}
	for _, bl := range blocks {
		eachStmt(bl, func(stmts []stmt, i int) {
			s := &stmts[i]
			var v ast.Value
			switch s.kind {
			case kMakeArray:
				if changed[s.b] == 0 {
					v = ast.NewArray()
				}
			case kMakeArrayItems:
				if items, ok := b.constants(s.args); ok && changed[s.b] == 0 {
					v = ast.NewArray(items...)
				}
			case kMakeObject:
				if changed[s.b] == 0 {
					v = ast.NewObject()
				}
			case kMakeObjectItems:
				if items, ok := b.constants(s.args); ok && changed[s.b] == 0 {
					pairs := make([][2]*ast.Term, len(items)/2)
					for j := range pairs {
						pairs[j] = [2]*ast.Term{items[2*j], items[2*j+1]}
					}
					v = ast.NewObject(pairs...)
				}
			case kMakeSet:
				if changed[s.b] != 0 {
					return
				}
				adds := members[s]
				ops := make([]int32, len(adds))
				for j, k := range adds {
					ops[j] = stmts[k].a
					stmts[k] = stmt{kind: kNop, loc: stmts[k].loc}
				}
				items, _ := b.constants(ops)
				v = ast.NewSet(items...)
			}
			if v != nil {
				*s = stmt{kind: kAssignVar, a: b.share(v), b: s.b, loc: s.loc}
			}
		})
	}
}

// setMembers are the indices of the adds of the members of the set
// literal made at i: the adds of constants to its local that follow it,
// up to a statement that may leave the block or that reads or makes its
// local otherwise.
func setMembers(stmts []stmt, i int) []int {
	l := stmts[i].b
	var adds []int
	for k := i + 1; k < len(stmts) && total(stmts[k].kind); k++ {
		a := &stmts[k]
		if a.kind == kSetAdd && a.b == l && a.a < 0 {
			adds = append(adds, k)
			continue
		}
		if reads(a, l) || writes(a) == l {
			break
		}
	}
	return adds
}

// readsData marks the functions of the data alone: rules (functions of
// the input and data) whose statements never read the input but to pass
// it on to other such functions. The data of a Program is read once, when
// it is compiled, and every built-in a plan calls is a function of its
// arguments (others are refused), so such a function has one value for
// all evaluations: the first to work it out keeps it (Program.kept), and
// the others read it. A rule that checks the data against itself, say,
// is then checked once, not on every call.
func readsData(funcs []*function) {
	for _, fn := range funcs {
		fn.dataOnly = fn.memo
	}
	for changed := true; changed; {
		changed = false
		for _, fn := range funcs {
			if fn.dataOnly && readsInput(fn) {
				fn.dataOnly, changed = false, true
			}
		}
	}
}

// clocked are the built-ins whose answer depends on the time of the call
// (a certificate's or a token's validity, unless given a time), which OPA
// does not mark nondeterministic: a function that calls one is worked out
// on every evaluation, as if it read the input.
var clocked = map[string]bool{
	"crypto.x509.parse_and_verify_certificates":              true,
	"crypto.x509.parse_and_verify_certificates_with_options": true,
	"io.jwt.decode_verify":                                   true,
}

// readsInput reports whether a statement of fn reads the input (local 0)
// other than to pass it, as its first argument, to a function of the
// data alone, or calls a built-in that reads the clock.
func readsInput(fn *function) bool {
	reads := false
	for _, bl := range fn.blocks {
		forEach(bl, func(s *stmt) {
			if s.kind == kCallBuiltin && clocked[s.bi.name] {
				reads = true
			}
			for i, o := range operands(s) {
				if o == int32(ir.Input) && !(s.kind == kCallFunc && i == 0 && s.fn.dataOnly) {
					reads = true
				}
			}
		})
	}
	return reads
}

// operands are the locals and constants a statement reads (not those of
// the blocks in it), and, for a with, the local it changes.
func operands(s *stmt) []int32 {
	switch s.kind {
	case kArrayAppend, kEqual, kNotEqual, kSetAdd, kWith:
		return []int32{s.a, s.b}
	case kAssignVarOnce, kAssignVar, kIsArray, kIsObject, kIsSet, kIsDefined, kIsUndefined, kLen, kResultSetAdd, kReturnLocal, kScan:
		return []int32{s.a}
	case kCallFunc, kCallBuiltin, kMakeObjectItems, kMakeArrayItems:
		return s.args
	case kDot:
		return []int32{s.a, s.c}
	case kObjectInsert, kObjectInsertOnce:
		return []int32{s.a, s.b, s.c}
	}
	return nil
}

// bareResults makes the plan's results the values of its query's one
// expression, where the plan binds each in an object of one member that
// Eval would only take apart again: every result the plan adds is such
// an object, made (at once, see fuseObjects) right before it is added.
// Then the plan adds the value, and Eval returns it as it is.
func bareResults(p *Program) {
	var adds [][]stmt // the blocks' statements, from a result's making
	ok := true
	for _, bl := range p.blocks {
		eachStmt(bl, func(stmts []stmt, i int) {
			if stmts[i].kind != kResultSetAdd {
				return
			}
			if i == 0 || stmts[i-1].kind != kMakeObjectItems || stmts[i-1].b != stmts[i].a || len(stmts[i-1].args) != 2 {
				ok = false
				return
			}
			adds = append(adds, stmts[i-1:i+1])
		})
	}
	if !ok {
		return
	}
	for _, pair := range adds {
		v := pair[0].args[1]
		pair[0] = stmt{kind: kNop, loc: pair[0].loc}
		pair[1].a = v
	}
	p.bare = len(adds) > 0
}

// dropNops takes out of blocks the statements that do nothing: those the
// plan has, and those its literals made at once or shared left.
func dropNops(blocks []*block) {
	for _, bl := range blocks {
		bl.stmts = slices.DeleteFunc(bl.stmts, func(s stmt) bool { return s.kind == kNop })
		for i := range bl.stmts {
			dropNops(bl.stmts[i].blocks)
			if bl.stmts[i].body != nil {
				dropNops([]*block{bl.stmts[i].body})
			}
		}
	}
}

// eachStmt calls f with each statement of bl and of the blocks in it, by
// its block's statements and its index.
func eachStmt(bl *block, f func(stmts []stmt, i int)) {
	for i := range bl.stmts {
		for _, inner := range bl.stmts[i].blocks {
			eachStmt(inner, f)
		}
		if bl.stmts[i].body != nil {
			eachStmt(bl.stmts[i].body, f)
		}
		f(bl.stmts, i)
	}
}

// forEach calls f with each statement of bl and of the blocks in it.
func forEach(bl *block, f func(*stmt)) {
	eachStmt(bl, func(stmts []stmt, i int) { f(&stmts[i]) })
}

// constants are the terms of operands, if all are constants.
func (b *builder) constants(ops []int32) ([]*ast.Term, bool) {
	out := make([]*ast.Term, len(ops))
	for i, o := range ops {
		if o >= 0 {
			return nil, false
		}
		out[i] = b.prog.consts[-1-o]
	}
	return out, true
}

// share is the operand of the shared constant v: one for all the
// literals of one value.
func (b *builder) share(v ast.Value) int32 {
	key := v.String()
	if o, ok := b.literals[key]; ok {
		return o
	}
	if b.prog.shared == nil {
		b.prog.shared = map[ast.Value]bool{}
	}
	b.prog.shared[v] = true
	b.prog.consts = append(b.prog.consts, ast.NewTerm(v))
	o := -int32(len(b.prog.consts))
	b.literals[key] = o
	return o
}

// builder resolves statements: functions and built-ins by name, operands
// to locals and constants, and counts the locals of each function.
type builder struct {
	prog     *Program
	strings  []*ir.StringConst
	files    []*ir.StringConst // the modules' files, for a built-in's location
	funcs    map[string]*function
	builtins map[string]*builtin
	max      int
	// numbers are the operands of the numbers made so far, by the string
	// constant each is made of.
	numbers map[int]int32
	// literals are the operands of the shared constants, by value.
	literals map[string]int32
	// integers are the operands of the whole numbers made so far (see
	// integer), by value.
	integers map[int64]int32
}

func (b *builder) local(l ir.Local) int32 {
	b.max = max(b.max, int(l))
	return int32(l)
}

func (b *builder) operand(o ir.Operand) (int32, error) {
	switch v := o.Value.(type) {
	case ir.Local:
		return b.local(v), nil
	case ir.StringIndex:
		if int(v) < 0 || int(v) >= len(b.strings) {
			return 0, fmt.Errorf("string constant %d out of range", v)
		}
		return -1 - int32(v), nil
	case ir.Bool:
		i := len(b.strings)
		if v {
			i++
		}
		return -1 - int32(i), nil
	}
	return 0, fmt.Errorf("%w: operand %T", ErrUnsupported, o.Value)
}

// integer is the operand of the constant whole number n: one for all the
// numbers n the plan makes (MakeNumberInt), the term such a statement
// gives.
func (b *builder) integer(n int64) int32 {
	if c, ok := b.integers[n]; ok {
		return c
	}
	if b.integers == nil {
		b.integers = map[int64]int32{}
	}
	b.prog.consts = append(b.prog.consts, ast.InternedTerm(int(n)))
	c := -int32(len(b.prog.consts))
	b.integers[n] = c
	return c
}

// number is the operand of the number the string constant i spells.
func (b *builder) number(i int) int32 {
	if c, ok := b.numbers[i]; ok {
		return c
	}
	b.prog.consts = append(b.prog.consts, ast.NewTerm(ast.Number(b.strings[i].Value)))
	c := -int32(len(b.prog.consts))
	b.numbers[i] = c
	return c
}

func (b *builder) block(in *ir.Block) (*block, error) {
	out := &block{}
	for _, s := range in.Stmts {
		rs, err := b.stmt(s)
		if err != nil {
			return nil, err
		}
		out.stmts = append(out.stmts, rs)
	}
	b.fuseObjects(out.stmts)
	b.forwardConstants(out.stmts)
	fuseArrays(out.stmts)
	sizeObjects(out.stmts)
	return out, nil
}

// fuseObjects makes each object literal of a block at once, with all its
// members, where the plan makes it empty and inserts them one by one: one
// allocation for its members instead of one each. The plan of a literal
// makes the object, then inserts its members, each under a constant key,
// with statements between them that make the members' values. An object
// is made at once, at its last insert, when
//   - the statements from the making to that insert are all ones that
//     cannot leave the block (make a value, assign one, insert into an
//     object): the block never stops with the object half made;
//   - none of them reads or writes the object's local other than its
//     inserts, and those have constant keys that differ;
//   - no member's value local is given another value after its insert.
//
// Then the object its last insert leaves is the object made at once.
func (b *builder) fuseObjects(stmts []stmt) {
	for i := range stmts {
		if stmts[i].kind != kMakeObject {
			continue
		}
		l := stmts[i].b
		keys := map[string]bool{}
		inserts := literal(stmts, i, func(s *stmt) (own, stop bool) {
			if s.kind != kObjectInsert || s.b != l {
				return false, false
			}
			k, ok := b.constString(s.a)
			if !ok || keys[k] || s.c == l {
				return false, true
			}
			keys[k] = true
			return true, false
		}, func(s *stmt) int32 { return s.c })
		if inserts == nil {
			continue
		}
		items := make([]int32, 0, 2*len(inserts))
		for _, j := range inserts {
			items = append(items, stmts[j].a, stmts[j].c)
		}
		madeAtOnce(stmts, i, inserts, stmt{kind: kMakeObjectItems, b: l, args: items})
		b.prog.maxItems = max(b.prog.maxItems, len(inserts))
	}
}

// literal finds the members of the literal the statement at i makes: the
// statements after it that member says are its own (stop: the literal
// ends before that one), up to one that may leave the block or that
// reads or writes the literal's local otherwise. It returns their
// indices, or none when a member's value local (value) is given another
// value before the last member: the literal made at once there would not
// be the one made member by member.
func literal(stmts []stmt, i int, member func(s *stmt) (own, stop bool), value func(s *stmt) int32) []int {
	l := stmts[i].b
	var members []int
	for j := i + 1; j < len(stmts) && total(stmts[j].kind); j++ {
		s := &stmts[j]
		own, stop := member(s)
		if stop {
			break
		}
		if own {
			members = append(members, j)
			continue
		}
		if reads(s, l) || writes(s) == l {
			break
		}
	}
	if len(members) == 0 {
		return nil
	}
	last := members[len(members)-1]
	for _, j := range members {
		if v := value(&stmts[j]); v >= 0 {
			for k := j + 1; k <= last; k++ {
				if writes(&stmts[k]) == v {
					return nil
				}
			}
		}
	}
	return members
}

// madeAtOnce replaces the making of a literal (at i) and its members by
// made, at the last member.
func madeAtOnce(stmts []stmt, i int, members []int, made stmt) {
	last := members[len(members)-1]
	made.loc = stmts[last].loc
	for _, j := range members {
		stmts[j] = stmt{kind: kNop, loc: stmts[j].loc}
	}
	stmts[i] = stmt{kind: kNop, loc: stmts[i].loc}
	stmts[last] = made
}

// forwardConstants gives an append or add of a local that holds a
// constant, and a member of an object made at once (fuseObjects) whose
// value is such a local, the constant itself, where the local was given
// it by an assignment that no statement between could have undone (the
// plan assigns a number to a local before it appends or inserts it): an
// array, set or object of constants is then seen to be one (see
// shareConstants). A whole number the plan makes (MakeNumberInt) is such
// a constant too.
func (b *builder) forwardConstants(stmts []stmt) {
	for j := range stmts {
		s := &stmts[j]
		switch s.kind {
		case kArrayAppend, kSetAdd:
			s.a = b.forward(stmts, j, s.a)
		case kMakeObjectItems:
			for i := 1; i < len(s.args); i += 2 {
				s.args[i] = b.forward(stmts, j, s.args[i])
			}
		}
	}
}

// forward is the constant local o holds when statement j reads it, given
// by a statement of stmts before j that no statement between could have
// undone; else o.
func (b *builder) forward(stmts []stmt, j int, o int32) int32 {
	if o < 0 {
		return o
	}
	for k := j - 1; k >= 0 && total(stmts[k].kind); k-- {
		if writes(&stmts[k]) != o {
			continue
		}
		switch w := &stmts[k]; {
		case w.kind == kAssignVar && w.a < 0:
			return w.a
		case w.kind == kMakeNumberInt:
			return b.integer(w.n)
		}
		break
	}
	return o
}

// fuseArrays makes each array literal of a block at once, with all its
// elements, where the plan makes it empty and appends them one by one: an
// append copies the array's header, so one allocation for the array
// instead of one an element. The plan of a literal makes the array, then
// appends its elements, with statements between them that make the
// elements' values. As for objects (fuseObjects), an array is made at
// once, at its last append, when the statements from the making to that
// append cannot leave the block, none of them reads or writes the array's
// local other than its appends, and no element's value local is given
// another value after its append. Then the array its last append leaves
// is the array made at once.
func fuseArrays(stmts []stmt) {
	for i := range stmts {
		if stmts[i].kind != kMakeArray {
			continue
		}
		l := stmts[i].b
		appends := literal(stmts, i, func(s *stmt) (own, stop bool) {
			if s.kind != kArrayAppend || s.b != l {
				return false, false
			}
			return s.a != l, s.a == l
		}, func(s *stmt) int32 { return s.a })
		if appends == nil {
			continue
		}
		items := make([]int32, 0, len(appends))
		for _, j := range appends {
			items = append(items, stmts[j].a)
		}
		madeAtOnce(stmts, i, appends, stmt{kind: kMakeArrayItems, b: l, args: items})
	}
}

// total reports whether a statement of kind k always goes on to the next
// (or fails the evaluation): it never leaves its block.
func total(k kind) bool {
	switch k {
	case kMakeNull, kMakeNumberInt, kAssignInt, kAssignVar, kMakeArray, kMakeObject, kMakeSet, kObjectInsert, kArrayAppend, kSetAdd, kNop:
		return true
	}
	return false
}

// reads reports whether s, a total statement, reads local l.
func reads(s *stmt, l int32) bool {
	switch s.kind {
	case kAssignVar:
		return s.a == l
	case kObjectInsert:
		return s.a == l || s.b == l || s.c == l
	case kArrayAppend, kSetAdd:
		return s.a == l || s.b == l
	}
	return false
}

// writes is the local a total statement gives a value (-1: none; an
// insert changes its object, but gives its local no other value).
func writes(s *stmt) int32 {
	switch s.kind {
	case kMakeNull, kMakeNumberInt, kAssignInt, kAssignVar, kMakeArray, kMakeObject, kMakeSet:
		return s.b
	}
	return -1
}

// constString is the string constant operand o names, if it names one.
func (b *builder) constString(o int32) (string, bool) {
	if o >= 0 || int(-1-o) >= len(b.strings) {
		return "", false
	}
	return b.strings[-1-o].Value, true
}

// sizeObjects gives each object a block makes the number of inserts into
// it that follow in the block (an object literal's members), for it to be
// made with room for them. A size is only a hint: an insert past it, or
// one fewer, is still right.
func sizeObjects(stmts []stmt) {
	for i := range stmts {
		if stmts[i].kind != kMakeObject {
			continue
		}
		n := 0
		for _, s := range stmts[i+1:] {
			if s.b != stmts[i].b {
				continue
			}
			if s.kind == kMakeObject {
				break // the local is made another object
			}
			if s.kind == kObjectInsert || s.kind == kObjectInsertOnce {
				n++
			}
		}
		stmts[i].n = int64(n)
	}
}

func (b *builder) stmt(s ir.Stmt) (stmt, error) {
	var (
		out  = stmt{loc: s.GetLocation()}
		errs []error
	)
	op := func(o ir.Operand) int32 {
		v, err := b.operand(o)
		errs = append(errs, err)
		return v
	}
	blk := func(in *ir.Block) *block {
		r, err := b.block(in)
		errs = append(errs, err)
		return r
	}
	switch s := s.(type) {
	case *ir.ArrayAppendStmt:
		out.kind, out.a, out.b = kArrayAppend, op(s.Value), b.local(s.Array)
	case *ir.AssignIntStmt:
		out.kind, out.n, out.b = kAssignInt, s.Value, b.local(s.Target)
	case *ir.AssignVarOnceStmt:
		out.kind, out.a, out.b = kAssignVarOnce, op(s.Source), b.local(s.Target)
	case *ir.AssignVarStmt:
		out.kind, out.a, out.b = kAssignVar, op(s.Source), b.local(s.Target)
	case *ir.BlockStmt:
		out.kind = kBlock
		for _, x := range s.Blocks {
			out.blocks = append(out.blocks, blk(x))
		}
	case *ir.BreakStmt:
		out.kind, out.n = kBreak, int64(s.Index)
	case *ir.CallStmt:
		out.b = b.local(s.Result)
		for _, a := range s.Args {
			out.args = append(out.args, op(a))
		}
		if fn, ok := b.funcs[s.Func]; ok {
			out.kind, out.fn = kCallFunc, fn
			if len(s.Args) != len(fn.params) {
				return out, fmt.Errorf("call of %s with %d arguments, want %d", s.Func, len(s.Args), len(fn.params))
			}
		} else if bi, ok := b.builtins[s.Func]; ok {
			out.kind, out.bi = kCallBuiltin, bi
			// The built-in is told its call's file, as topdown tells it
			// (a built-in may bound the harness's own calls otherwise
			// than a custom policy's).
			out.at = &ast.Location{Row: s.Location.Row, Col: s.Location.Col}
			if f := s.Location.File; f >= 0 && f < len(b.files) {
				out.at.File = b.files[f].Value
			}
			b.prog.maxArgs = max(b.prog.maxArgs, len(s.Args))
		} else {
			return out, fmt.Errorf("%w: call of %s", ErrUnsupported, s.Func)
		}
	case *ir.DotStmt:
		out.kind, out.a, out.c, out.b = kDot, op(s.Source), op(s.Key), b.local(s.Target)
	case *ir.EqualStmt:
		out.kind, out.a, out.b = kEqual, op(s.A), op(s.B)
	case *ir.NotEqualStmt:
		out.kind, out.a, out.b = kNotEqual, op(s.A), op(s.B)
	case *ir.IsArrayStmt:
		out.kind, out.a = kIsArray, op(s.Source)
	case *ir.IsObjectStmt:
		out.kind, out.a = kIsObject, op(s.Source)
	case *ir.IsSetStmt:
		out.kind, out.a = kIsSet, op(s.Source)
	case *ir.IsDefinedStmt:
		out.kind, out.a = kIsDefined, b.local(s.Source)
	case *ir.IsUndefinedStmt:
		out.kind, out.a = kIsUndefined, b.local(s.Source)
	case *ir.LenStmt:
		out.kind, out.a, out.b = kLen, op(s.Source), b.local(s.Target)
	case *ir.MakeArrayStmt:
		out.kind, out.n, out.b = kMakeArray, int64(s.Capacity), b.local(s.Target)
	case *ir.MakeNullStmt:
		out.kind, out.b = kMakeNull, b.local(s.Target)
	case *ir.MakeNumberIntStmt:
		out.kind, out.n, out.b = kMakeNumberInt, s.Value, b.local(s.Target)
	case *ir.MakeNumberRefStmt:
		if s.Index < 0 || s.Index >= len(b.strings) {
			return out, fmt.Errorf("number constant %d out of range", s.Index)
		}
		// A number is made once, when the plan is built: a term is
		// never changed once made (only a made array's value is, by an
		// append), so every evaluation can share it.
		out.kind, out.a, out.b = kAssignVar, b.number(s.Index), b.local(s.Target)
	case *ir.MakeObjectStmt:
		out.kind, out.b = kMakeObject, b.local(s.Target)
	case *ir.MakeSetStmt:
		out.kind, out.b = kMakeSet, b.local(s.Target)
	case *ir.NopStmt:
		out.kind = kNop
	case *ir.NotStmt:
		out.kind, out.body = kNot, blk(s.Block)
	case *ir.ObjectInsertOnceStmt:
		out.kind, out.a, out.c, out.b = kObjectInsertOnce, op(s.Key), op(s.Value), b.local(s.Object)
	case *ir.ObjectInsertStmt:
		out.kind, out.a, out.c, out.b = kObjectInsert, op(s.Key), op(s.Value), b.local(s.Object)
	case *ir.ResetLocalStmt:
		out.kind, out.b = kResetLocal, b.local(s.Target)
	case *ir.ResultSetAddStmt:
		out.kind, out.a = kResultSetAdd, b.local(s.Value)
	case *ir.ReturnLocalStmt:
		out.kind, out.a = kReturnLocal, b.local(s.Source)
	case *ir.ScanStmt:
		out.kind, out.a, out.b, out.c = kScan, b.local(s.Source), b.local(s.Key), b.local(s.Value)
		out.body = blk(s.Block)
	case *ir.SetAddStmt:
		out.kind, out.a, out.b = kSetAdd, op(s.Value), b.local(s.Set)
	case *ir.WithStmt:
		if len(s.Path) > 0 && s.Local != ir.Input {
			// Topdown's with on data is not a changed document: it lays
			// the value over the data, and a read at or below the path
			// sees the value alone, a read above it the data merged with
			// it. No one document the plan could give its statements
			// reads both ways. (An empty path is the planner's restore of
			// a local after a with, of input and data alike.)
			return out, fmt.Errorf("%w: with on data", ErrUnsupported)
		}
		out.kind, out.b, out.a = kWith, b.local(s.Local), op(s.Value)
		for _, i := range s.Path {
			if i < 0 || i >= len(b.strings) {
				return out, fmt.Errorf("with: path constant %d out of range", i)
			}
			out.args = append(out.args, -1-int32(i))
		}
		out.body = blk(s.Block)
	default:
		name := fmt.Sprintf("%T", s)
		return out, fmt.Errorf("%w: %s", ErrUnsupported, strings.TrimPrefix(name, "*ir."))
	}
	return out, errors.Join(errs...)
}
