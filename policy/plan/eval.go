package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/builtins"
	"github.com/open-policy-agent/opa/v1/topdown/cache"
)

// Options are what an evaluation shares with its caller.
type Options struct {
	// Values is the cache of compiled patterns (regex.match, glob.match)
	// the built-ins keep across evaluations; nil for OPA's process-wide one.
	Values cache.InterQueryValueCache
	// Cancel, when set, ends built-ins that look at it (as topdown's do);
	// unset, Eval makes one that ctx's end cancels.
	Cancel topdown.Cancel
	// Stop, when set with Cancel, is the evaluation's own end: its
	// caller sets Stop and cancels Cancel when the evaluation must end,
	// ctx's end included, and Eval then watches no context itself (which
	// costs a registration with ctx and a few allocations an
	// evaluation). An evaluation Stop ends fails with ctx's error, or
	// ErrStopped when ctx has not ended.
	Stop *atomic.Bool
	// Steps, when set, has the statements the evaluation ran added to
	// it: a measure of its work that, unlike its time, is the same on
	// every run and every machine, given the values the Program has kept
	// from evaluations before (see readsData).
	Steps *int64
}

// noMetrics is the built-ins' metrics: counted by no one.
var noMetrics = metrics.NoOp()

// ErrConflict is an evaluation's conflict: a complete rule or a function
// with two different values, an object with two values for one key.
var ErrConflict = errors.New("conflicting values")

// errShared is a defect: an append or add to a constant the evaluations
// share (see shareConstants). The evaluation fails rather than change it.
var errShared = errors.New("a change to a shared constant")

// Eval evaluates the query on input. It returns the value of the query's
// one expression, nil when the query is undefined, and an error for a
// conflict, a built-in's error (built-in errors are strict, as the
// harness's topdown queries run) or the end of ctx.
//
// A panic inside the evaluation (a defect, here or in a built-in) is an
// error, not the end of the process that decides.
func (p *Program) Eval(ctx context.Context, input ast.Value, opts Options) (v ast.Value, err error) {
	e := p.evaluation(ctx, input)
	defer func() {
		if r := recover(); r != nil {
			// Its state is whatever the panic left: not reused.
			v, err = nil, fmt.Errorf("plan evaluation failed: %v", r)
			return
		}
		if opts.Steps != nil {
			*opts.Steps += e.steps
		}
		e.release()
	}()
	cancel := opts.Cancel
	switch {
	case opts.Stop != nil && cancel != nil:
		e.ended = opts.Stop
	case ctx.Done() != nil:
		// The built-ins that run long (numbers.range, net.cidr_expand)
		// watch a Cancel, not the context; the statements watch ended,
		// set with it (a flag of this call's own: a pooled evaluation
		// may outlive the function that sets it).
		c, ended := topdown.NewCancel(), new(atomic.Bool)
		defer context.AfterFunc(ctx, func() {
			ended.Store(true)
			c.Cancel()
		})()
		if cancel == nil {
			cancel = c
		}
		if ctx.Err() != nil { // AfterFunc's own goroutine may start late
			ended.Store(true)
		}
		e.ended = ended
	}
	e.bctx = topdown.BuiltinContext{
		Context:                     ctx,
		Metrics:                     noMetrics,
		Cancel:                      cancel,
		Cache:                       e.cache,
		InterQueryBuiltinValueCache: opts.Values,
	}
	locals := e.frame(p.locals)
	locals[0], locals[1] = e.input, p.data
	for _, b := range p.blocks {
		r := e.block(b, locals)
		if r == ctlError {
			return nil, e.err
		}
		if r >= 1 || r == ctlReturn {
			break
		}
	}
	return e.result()
}

// evaluations are evaluations done with, their slices and maps kept for
// the next: an evaluation's locals, memos and arguments would otherwise
// be a tenth of what a decision allocates.
var evaluations sync.Pool

// evaluation returns an evaluation of p on input, from the pool.
func (p *Program) evaluation(ctx context.Context, input ast.Value) *evaluation {
	e, _ := evaluations.Get().(*evaluation)
	if e == nil {
		e = &evaluation{cache: builtins.Cache{}}
		e.yield_ = e.yield
	}
	e.prog, e.ctx, e.input, e.ended = p, ctx, ast.NewTerm(input), &never
	e.memo = slices.Grow(e.memo[:0], len(p.funcs))[:len(p.funcs)]
	e.args = slices.Grow(e.args[:0], p.maxArgs)[:p.maxArgs]
	e.items = slices.Grow(e.items[:0], p.maxItems)[:p.maxItems]
	return e
}

// release clears e, keeping nothing of its evaluation, and returns it to
// the pool.
func (e *evaluation) release() {
	clear(e.memo)
	clear(e.args)
	clear(e.items)
	clear(e.stack) // past its length, the stack is all nil (see frame)
	clear(e.results)
	clear(e.cache)
	// A relation's values are not kept: they are the elements of the
	// array the built-in's call gave, which the plan may have kept.
	*e = evaluation{memo: e.memo[:0], args: e.args[:0], items: e.items[:0], stack: e.stack[:0], results: e.results[:0],
		cache: e.cache, yield_: e.yield_, scanners: e.scanners}
	evaluations.Put(e)
}

// frame takes n locals from the evaluation's stack, all undefined. Calls
// nest, so frames are given back (drop) in the order they were taken.
//
// A plan takes a call's locals to start undefined (a complete rule's
// default is given when its value is still undefined): the stack past its
// length is all nil, since drop and release clear what they give back,
// and slices.Grow copies only that (grown, the stack holds copies of the
// locals of the calls in progress, and nil past them).
func (e *evaluation) frame(n int) []*ast.Term {
	base := len(e.stack)
	if cap(e.stack)-base < n {
		e.stack = slices.Grow(e.stack, n)
	}
	e.stack = e.stack[:base+n]
	return e.stack[base:]
}

// drop gives back the last frame of n locals.
func (e *evaluation) drop(n int) {
	clear(e.stack[len(e.stack)-n:])
	e.stack = e.stack[:len(e.stack)-n]
}

// result reads the query's value from the result set: one binding, an
// object of one key (the query's expression) to its value; or, where the
// plan adds the values themselves (Program.bare), one value.
func (e *evaluation) result() (ast.Value, error) {
	switch len(e.results) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%d results, want one", len(e.results))
	}
	if e.prog.bare {
		return e.results[0].Value, nil
	}
	o, ok := e.results[0].Value.(ast.Object)
	if !ok || o.Len() != 1 {
		return nil, fmt.Errorf("result %v is not one binding", e.results[0])
	}
	var v ast.Value
	o.Foreach(func(_, t *ast.Term) { v = t.Value })
	return v, nil
}

// evaluation is one run of a Program.
type evaluation struct {
	prog    *Program
	ctx     context.Context
	bctx    topdown.BuiltinContext
	input   *ast.Term
	memo    []memoEntry
	results []*ast.Term
	ret     *ast.Term
	err     error
	// ended is set when ctx ends: looked at every statement, since what
	// a statement costs is not known before it runs (a with copies the
	// input, a built-in may format or copy all of an agent's arguments).
	ended *atomic.Bool
	// steps counts the statements run (see Options.Steps).
	steps int64
	// stack holds the locals of the calls in progress.
	stack []*ast.Term
	cache builtins.Cache

	// A built-in's arguments, and what it yields (yield, a method value
	// made once an evaluation).
	args   []*ast.Term
	yield_ func(*ast.Term) error
	// items are an object literal's members, made at once.
	items    [][2]*ast.Term
	out      *ast.Term
	all      []*ast.Term
	relation bool
	relTerms int
	// scanners are the states of the scans in progress, depth of them
	// (see scan): kept with the evaluation.
	scanners []*scanner
	depth    int
}

type memoEntry struct {
	done bool
	val  *ast.Term
}

// A block's outcome: it ran to its end (ctlEnd); it was left by an
// undefined statement or a break (n >= 0: the number of blocks around it
// to leave as well); a return statement ran (ctlReturn); evaluation failed
// (ctlError, e.err).
const (
	ctlEnd    = -1
	ctlReturn = -2
	ctlError  = -3
)

// never is the ended flag of an evaluation whose context cannot end.
var never atomic.Bool

// ErrStopped is the error of an evaluation its caller stopped (Options.Stop)
// while its context had not ended.
var ErrStopped = errors.New("evaluation stopped")

// stopped is the error of an evaluation that ended: its context's, or
// ErrStopped when its caller stopped it.
func (e *evaluation) stopped() error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	return ErrStopped
}

func (e *evaluation) fail(err error) int {
	e.err = err
	return ctlError
}

// get reads an operand.
func (e *evaluation) get(L []*ast.Term, o int32) *ast.Term {
	if o >= 0 {
		return L[o]
	}
	return e.prog.consts[-1-o]
}

// block runs b with locals L.
func (e *evaluation) block(b *block, L []*ast.Term) int {
	for i := range b.stmts {
		s := &b.stmts[i]
		e.steps++
		if e.ended.Load() {
			return e.fail(e.stopped())
		}
		switch s.kind {
		case kArrayAppend:
			arr, ok := L[s.b].Value.(*ast.Array)
			v := e.get(L, s.a)
			if !ok || v == nil {
				return e.fail(fmt.Errorf("%s: append to %v", where(s), L[s.b]))
			}
			if e.prog.shared[arr] {
				return e.fail(fmt.Errorf("%s: %w", where(s), errShared))
			}
			L[s.b].Value = arr.Append(v)
		case kAssignInt:
			L[s.b] = ast.InternedTerm(int(s.n))
		case kAssignVarOnce:
			// A value equal to the one already there (1 and 1.0) leaves
			// that one, as topdown keeps the first.
			v := e.get(L, s.a)
			if cur := L[s.b]; cur != nil && v != nil {
				if cur != v && ast.Compare(cur.Value, v.Value) != 0 {
					return e.fail(fmt.Errorf("%s: %w", where(s), ErrConflict))
				}
				continue
			}
			L[s.b] = v
		case kAssignVar:
			L[s.b] = e.get(L, s.a)
		case kBlock:
			for _, inner := range s.blocks {
				switch r := e.block(inner, L); {
				case r == ctlReturn || r == ctlError:
					return r
				case r >= 1:
					return r - 1
				}
			}
		case kBreak:
			return int(s.n)
		case kCallFunc:
			v, r := e.call(s, L)
			if r == ctlError {
				return r
			}
			if v == nil {
				return 0
			}
			L[s.b] = v
		case kCallBuiltin:
			v, err := e.builtin(s, L)
			if err != nil {
				return e.fail(err)
			}
			if v == nil {
				return 0
			}
			L[s.b] = v
		case kDot:
			v := dot(e.get(L, s.a), e.get(L, s.c))
			if v == nil {
				return 0
			}
			L[s.b] = v
		case kEqual:
			a, b := e.get(L, s.a), e.get(L, s.b)
			if a == nil || b == nil || (a != b && ast.Compare(a.Value, b.Value) != 0) {
				return 0
			}
		case kNotEqual:
			a, b := e.get(L, s.a), e.get(L, s.b)
			if a == nil || b == nil || a == b || ast.Compare(a.Value, b.Value) == 0 {
				return 0
			}
		case kIsArray:
			if v := e.get(L, s.a); v == nil || !isArray(v.Value) {
				return 0
			}
		case kIsObject:
			if v := e.get(L, s.a); v == nil || !isObject(v.Value) {
				return 0
			}
		case kIsSet:
			if v := e.get(L, s.a); v == nil || !isSet(v.Value) {
				return 0
			}
		case kIsDefined:
			if L[s.a] == nil {
				return 0
			}
		case kIsUndefined:
			if L[s.a] != nil {
				return 0
			}
		case kLen:
			v := e.get(L, s.a)
			if v == nil {
				return 0
			}
			L[s.b] = ast.InternedTerm(length(v.Value))
		case kMakeArray:
			L[s.b] = ast.NewTerm(ast.NewArrayWithCapacity(int(s.n)))
		case kMakeArrayItems:
			// An array literal's elements (see fuseArrays), each
			// defined, as an append needs.
			elems := make([]*ast.Term, len(s.args))
			for i, o := range s.args {
				if elems[i] = e.get(L, o); elems[i] == nil {
					return e.fail(fmt.Errorf("%s: append of an undefined value", where(s)))
				}
			}
			L[s.b] = ast.NewTerm(ast.NewArray(elems...))
		case kMakeNull:
			L[s.b] = ast.InternedNullTerm
		case kMakeNumberInt:
			L[s.b] = ast.InternedTerm(int(s.n))
		case kMakeObject:
			L[s.b] = ast.NewTerm(ast.NewObjectWithCapacity(int(s.n)))
		case kMakeObjectItems:
			// An object literal's members, keys and values (see
			// fuseObjects): each value defined, as an insert needs.
			items := e.items[:len(s.args)/2]
			for i := range items {
				k, v := e.get(L, s.args[2*i]), e.get(L, s.args[2*i+1])
				if v == nil {
					clear(items)
					return e.fail(fmt.Errorf("%s: insert of an undefined value", where(s)))
				}
				items[i] = [2]*ast.Term{k, v}
			}
			L[s.b] = ast.NewTerm(ast.NewObject(items...))
			clear(items)
		case kMakeSet:
			L[s.b] = ast.NewTerm(ast.NewSet())
		case kNop:
		case kNot:
			switch r := e.block(s.body, L); {
			case r == ctlReturn || r == ctlError:
				return r
			case r == ctlEnd:
				return 0
			case r >= 1:
				return r - 1
			}
		case kObjectInsertOnce, kObjectInsert:
			obj, ok := L[s.b].Value.(ast.Object)
			k, v := e.get(L, s.a), e.get(L, s.c)
			if !ok || k == nil || v == nil {
				return e.fail(fmt.Errorf("%s: insert into %v", where(s), L[s.b]))
			}
			if e.prog.shared[obj] {
				return e.fail(fmt.Errorf("%s: %w", where(s), errShared))
			}
			if s.kind == kObjectInsertOnce {
				if cur := obj.Get(k); cur != nil {
					if cur != v && ast.Compare(cur.Value, v.Value) != 0 {
						return e.fail(fmt.Errorf("%s: %w", where(s), ErrConflict))
					}
					continue // the first of equal values stays, as in topdown
				}
			}
			obj.Insert(k, v)
		case kResetLocal:
			L[s.b] = nil
		case kResultSetAdd:
			v := e.get(L, s.a)
			if v == nil && e.prog.bare {
				// The binding it stands for could not have been made.
				return e.fail(fmt.Errorf("%s: insert of an undefined value", where(s)))
			}
			if v != nil {
				e.results = append(e.results, v)
			}
		case kReturnLocal:
			e.ret = L[s.a]
			return ctlReturn
		case kScan:
			if r, stop := e.scan(s, L); stop {
				return r
			}
		case kSetAdd:
			set, ok := L[s.b].Value.(ast.Set)
			v := e.get(L, s.a)
			if !ok || v == nil {
				return e.fail(fmt.Errorf("%s: add to %v", where(s), L[s.b]))
			}
			if e.prog.shared[set] {
				return e.fail(fmt.Errorf("%s: %w", where(s), errShared))
			}
			set.Add(v)
		case kWith:
			// The block runs with the input changed at a path (Rego's
			// with; one on data is refused when compiled), as topdown
			// evaluates it: the input is copied along the path, each
			// object on it that is missing or not an object made one; an
			// empty path sets the local (the planner's restore after a
			// with). Memos stay apart: a function is memoised only when
			// called with the evaluation's own input and data, and the
			// changed input is neither.
			v := e.get(L, s.a)
			if v == nil {
				return e.fail(fmt.Errorf("%s: with an undefined value", where(s)))
			}
			saved := L[s.b]
			L[s.b] = e.upsert(saved, s.args, v)
			r := e.block(s.body, L)
			L[s.b] = saved
			switch {
			case r == ctlReturn || r == ctlError:
				return r
			case r >= 1:
				return r - 1
			case r == 0: // the block was left: the statement is undefined
				return 0
			}
		default:
			return e.fail(fmt.Errorf("%s: statement kind %d", where(s), s.kind))
		}
	}
	return ctlEnd
}

// upsert returns doc with v at path (string constants): doc itself left
// as it is, the objects along the path copied, or made where doc has
// none (as topdown does, whatever was there that is not an object is
// replaced). An empty path is v.
func (e *evaluation) upsert(doc *ast.Term, path []int32, v *ast.Term) *ast.Term {
	if len(path) == 0 {
		return v
	}
	out := ast.NewObject()
	var child *ast.Term
	if doc != nil {
		if obj, ok := doc.Value.(ast.Object); ok {
			obj.Foreach(func(k, v *ast.Term) { out.Insert(k, v) })
			child = obj.Get(e.prog.consts[-1-path[0]])
		}
	}
	key := e.prog.consts[-1-path[0]]
	out.Insert(key, e.upsert(child, path[1:], v))
	return ast.NewTerm(out)
}

// scan runs s's body for every key and value of its source: an array's
// indexes, an object's keys in order, a set's members (each its own key);
// a scalar has none. As in OPA's Wasm target, the body is left for the
// next member by an undefined statement or break 0, and break 1 leaves
// the scan. stop says the block holding s is left too, with outcome r.
//
// A scan's state is a scanner of the evaluation's own, one a level of
// scans in progress, kept with it: the callbacks an object's or set's
// iteration takes are made once for each scanner, not once a scan (which
// cost a decision some thirty allocations).
func (e *evaluation) scan(s *stmt, L []*ast.Term) (r int, stop bool) {
	src := L[s.a]
	if src == nil {
		return 0, false
	}
	if e.depth == len(e.scanners) {
		e.scanners = append(e.scanners, newScanner(e))
	}
	sc := e.scanners[e.depth]
	e.depth++
	sc.s, sc.L, sc.r, sc.stop = s, L, 0, false
	switch x := src.Value.(type) {
	case *ast.Array:
		for i := range x.Len() {
			if sc.each(ast.InternedTerm(i), x.Elem(i)) {
				break
			}
		}
	case ast.Object:
		x.Until(sc.pair)
	case ast.Set:
		x.Until(sc.member)
	}
	r, stop = sc.r, sc.stop
	sc.s, sc.L = nil, nil
	e.depth--
	return r, stop
}

// scanner is the state of one scan in progress (see scan).
type scanner struct {
	e    *evaluation
	s    *stmt
	L    []*ast.Term
	r    int
	stop bool
	// pair and member are each, as an object's and a set's iterations
	// take it: method values made once, with the scanner.
	pair   func(k, v *ast.Term) bool
	member func(m *ast.Term) bool
}

func newScanner(e *evaluation) *scanner {
	sc := &scanner{e: e}
	sc.pair = sc.each
	sc.member = func(m *ast.Term) bool { return sc.each(m, m) }
	return sc
}

// each runs the scan's body for key k and value v, and reports whether
// the scan ends there.
func (sc *scanner) each(k, v *ast.Term) bool {
	s, L := sc.s, sc.L
	L[s.b], L[s.c] = k, v
	switch r := sc.e.block(s.body, L); {
	case r == ctlReturn || r == ctlError:
		sc.r, sc.stop = r, true
		return true
	case r == 1:
		sc.r = ctlEnd
		return true
	case r >= 2:
		sc.r, sc.stop = r-2, true
		return true
	default:
		sc.r = r
	}
	return false
}

// Bounds on the values kept across evaluations (see keepable): a
// policy's rules of the data alone may be as large as an evaluation's
// bounds allow, a custom policy decides how large, and a value kept is
// never given back (until a reload). One value may measure maxKept, all
// of a Program's maxKeptTotal; past either, the rule is worked out by
// every evaluation, as it was before values were kept.
const (
	maxKept      = 64 << 10
	maxKeptTotal = 1 << 20
)

// keepable is a copy of v to keep across evaluations and its measure, or
// nil when it measures more than maxKept. The copy is made of memory of
// its own: a string a built-in cut from a larger one (substring, split),
// or an array sliced from a larger one, shares that one's memory, which
// keeping it would keep whole. A value measures 48 bytes a term, 16 more
// an element of an array and 64 a member of a set or object, and its
// strings' and numbers' lengths (about what they take in memory). A
// copy's members are in the original's order (every order a plan
// iterates in is their sorted order), its numbers spelled the same.
func keepable(v *ast.Term) (*ast.Term, int64) {
	var size int64
	var cp func(t *ast.Term) *ast.Term
	cp = func(t *ast.Term) *ast.Term {
		if size += 48; size > maxKept {
			return nil
		}
		var out ast.Value
		switch x := t.Value.(type) {
		case ast.Null, ast.Boolean:
			out = x
		case ast.String:
			if size += int64(len(x)); size > maxKept {
				return nil
			}
			out = ast.String(strings.Clone(string(x)))
		case ast.Number:
			if size += int64(len(x)); size > maxKept {
				return nil
			}
			out = ast.Number(strings.Clone(string(x)))
		case *ast.Array:
			elems := make([]*ast.Term, x.Len())
			for i := range elems {
				size += 16
				if elems[i] = cp(x.Elem(i)); elems[i] == nil {
					return nil
				}
			}
			out = ast.NewArray(elems...)
		case ast.Set:
			elems := make([]*ast.Term, 0, x.Len())
			if x.Until(func(m *ast.Term) bool {
				size += 64
				c := cp(m)
				elems = append(elems, c)
				return c == nil
			}) {
				return nil
			}
			out = ast.NewSet(elems...)
		case ast.Object:
			items := make([][2]*ast.Term, 0, x.Len())
			if x.Until(func(k, m *ast.Term) bool {
				size += 64
				ck, cm := cp(k), cp(m)
				items = append(items, [2]*ast.Term{ck, cm})
				return ck == nil || cm == nil
			}) {
				return nil
			}
			out = ast.NewObject(items...)
		default:
			return nil // not a value (a reference, a variable): not kept
		}
		return &ast.Term{Value: out}
	}
	c := cp(v)
	return c, size
}

// keep keeps the value v of the rule of the data alone fn, worked out by
// an evaluation, for the next ones: a copy of its own (keepable), within
// the bounds, or the mark that it is too large to keep. The first
// evaluation to keep a value keeps it.
func (p *Program) keep(fn *function, v *ast.Term) {
	slot := &p.kept[fn.index]
	if v == nil {
		slot.CompareAndSwap(nil, undefined)
		return
	}
	c, size := keepable(v)
	if c != nil && p.keptSize.Add(size) > maxKeptTotal {
		p.keptSize.Add(-size)
		c = nil
	}
	if c == nil {
		slot.CompareAndSwap(nil, tooLarge) // not measured again
		return
	}
	if !slot.CompareAndSwap(nil, c) {
		p.keptSize.Add(-size) // another evaluation kept it first
	}
}

// call calls a planned function; a nil value is undefined.
func (e *evaluation) call(s *stmt, L []*ast.Term) (*ast.Term, int) {
	fn := s.fn
	memo := fn.memo && e.get(L, s.args[0]) == e.input && e.get(L, s.args[1]) == e.prog.data
	if memo && e.memo[fn.index].done {
		return e.memo[fn.index].val, 0
	}
	keep := memo && fn.dataOnly
	if keep {
		switch v := e.prog.kept[fn.index].Load(); v {
		case nil:
		case tooLarge:
			keep = false
		default:
			if v == undefined {
				v = nil
			}
			e.memo[fn.index] = memoEntry{done: true, val: v}
			return v, 0
		}
	}
	locals := e.frame(fn.locals)
	defer e.drop(fn.locals)
	for i, p := range fn.params {
		v := e.get(L, s.args[i])
		if v == nil {
			return nil, 0
		}
		locals[p] = v
	}
	var ret *ast.Term
	returned := false
	for _, b := range fn.blocks {
		r := e.block(b, locals)
		if r == ctlError {
			return nil, r
		}
		if r == ctlReturn {
			ret, returned = e.ret, true
			break
		}
		if r >= 1 {
			break
		}
	}
	if !returned {
		ret = locals[fn.ret]
	}
	if memo {
		e.memo[fn.index] = memoEntry{done: true, val: ret}
		if keep {
			e.prog.keep(fn, ret)
		}
	}
	return ret, 0
}

// builtin calls OPA's implementation of a built-in; a nil value is
// undefined. A relation (walk) gives every value it yields, in an array.
func (e *evaluation) builtin(s *stmt, L []*ast.Term) (*ast.Term, error) {
	args := e.args[:len(s.args)]
	for i, a := range s.args {
		if args[i] = e.get(L, a); args[i] == nil {
			return nil, nil
		}
	}
	var key matchKey
	keep := false
	if s.bi.memo {
		if key, keep = keyOf(args); keep {
			if answer, ok := e.prog.matches.get(key); ok {
				clear(args)
				return ast.InternedTerm(answer), nil
			}
		}
	}
	if s.bi.short != nil {
		if answer := s.bi.short(args); answer != nil {
			clear(args)
			return answer, nil
		}
	}
	e.out, e.all, e.relation, e.relTerms = nil, nil, s.bi.relation, 0
	e.bctx.Location = s.at
	err := s.bi.f(e.bctx, args, e.yield_)
	clear(args)
	if err != nil {
		return nil, err
	}
	if keep && e.out != nil {
		if answer, ok := e.out.Value.(ast.Boolean); ok {
			e.prog.matches.put(key, bool(answer))
		}
	}
	if s.bi.relation {
		return ast.ArrayTerm(e.all...), nil
	}
	return e.out, nil
}

// yield takes a value a built-in gives.
func (e *evaluation) yield(t *ast.Term) error {
	if !e.relation {
		e.out = t
		return nil
	}
	// A relation's values are all kept before the plan scans them (where
	// topdown takes one at a time): walk's values hold their paths, which
	// grow with an input's depth. Past maxRelation terms the plan gives
	// up (a caller asks topdown, whose bounds then apply), and it stops
	// when its context ends.
	e.all = append(e.all, t)
	e.relTerms++
	if a, ok := t.Value.(*ast.Array); ok && a.Len() > 0 {
		if path, ok := a.Elem(0).Value.(*ast.Array); ok {
			e.relTerms += path.Len()
		}
	}
	if e.relTerms > maxRelation {
		return fmt.Errorf("%w: a relation of more than %d terms", ErrTooLarge, maxRelation)
	}
	if len(e.all)%256 == 0 && (e.ended.Load() || e.ctx.Err() != nil) {
		return e.stopped()
	}
	return nil
}

// maxRelation bounds the terms a relation's values (walk's paths and
// values) hold in one call.
const maxRelation = 1 << 16

// ErrTooLarge is an evaluation the plan gave up as too large for it.
var ErrTooLarge = errors.New("too large for the plan")

// dot looks key up in src: an object's value, an array's element, a
// set's member; nothing in a scalar.
func dot(src, key *ast.Term) *ast.Term {
	if src == nil || key == nil {
		return nil
	}
	switch x := src.Value.(type) {
	case ast.Object:
		return x.Get(key)
	case *ast.Array:
		n, ok := key.Value.(ast.Number)
		if !ok {
			return nil
		}
		i, ok := n.Int()
		if !ok || i < 0 || i >= x.Len() {
			return nil
		}
		return x.Elem(i)
	case ast.Set:
		if x.Contains(key) {
			return key
		}
	}
	return nil
}

func length(v ast.Value) int {
	switch x := v.(type) {
	case *ast.Array:
		return x.Len()
	case ast.Object:
		return x.Len()
	case ast.Set:
		return x.Len()
	case ast.String:
		return len([]rune(string(x)))
	}
	return 0
}

func isArray(v ast.Value) bool  { _, ok := v.(*ast.Array); return ok }
func isObject(v ast.Value) bool { _, ok := v.(ast.Object); return ok }
func isSet(v ast.Value) bool    { _, ok := v.(ast.Set); return ok }

// where names a statement's place in the policy.
func where(s *stmt) string {
	if s.loc == nil {
		return "plan"
	}
	return fmt.Sprintf("%d:%d", s.loc.Row, s.loc.Col)
}
