package plan

// dropCopies takes out of a function (its blocks; fixed, the locals it
// is given on entry: its parameters, its return local, the input and the
// data) the copies of one local into another that the planner makes
// (AssignVar from a local), reading the original instead: a function's
// every else branch copies its parameters into locals of its own, and a
// copy is a statement like any other to run. About a third of the
// statements a decision runs were such copies.
//
// A copy dst := src is dropped when every read of dst may read src
// instead: src is never given a value in the function (a parameter, the
// input or data, which are given theirs on entry), dst is given values
// only by copies of src and is not one of the fixed locals, and every
// read of dst comes after one of those copies, in the copy's block or a
// block inside a later statement of it. Then wherever dst is read it
// holds what src holds, the same term: reading src gives the same
// answer, and appends or inserts through it change the same value.
func dropCopies(blocks []*block, fixed []int32) {
	for dropCopiesOnce(blocks, fixed) {
		// A copy of a copy reads the original once the first is dropped.
	}
}

// dropCopiesOnce drops the copies it can (see dropCopies), and reports
// whether it dropped any.
func dropCopiesOnce(blocks []*block, fixed []int32) bool {
	writes := map[int32]int{}    // the statements that give each local a value
	copies := map[int32]int32{}  // the one source each local is copied from; -1: another
	written := map[int32]place{} // where a local given a value once is given it
	var visit func(bl *block)
	visit = func(bl *block) {
		for i := range bl.stmts {
			s := &bl.stmts[i]
			for _, inner := range s.blocks {
				visit(inner)
			}
			if s.body != nil {
				visit(s.body)
			}
			for _, l := range givenValues(s) {
				writes[l]++
				written[l] = place{bl, i}
			}
			if s.kind != kAssignVar {
				continue
			}
			if src, ok := copies[s.b]; s.a < 0 || (ok && src != s.a) {
				copies[s.b] = -1
			} else {
				copies[s.b] = s.a
			}
		}
	}
	for _, bl := range blocks {
		visit(bl)
	}
	isFixed := map[int32]bool{}
	for _, l := range fixed {
		isFixed[l] = true
	}
	// gone are the locals whose copies were dropped in this pass: what
	// was found of a copy from one of them is out of date.
	gone := map[int32]bool{}
	for dst, src := range copies {
		if src < 0 || gone[src] || isFixed[dst] || writes[dst] != countCopies(blocks, dst) {
			continue
		}
		switch {
		case writes[src] == 0:
			if !readAfterCopies(blocks, dst) {
				continue
			}
		case writes[src] == 1 && !isFixed[src] && writes[dst] == 1:
			if !readAfterWrite(blocks, dst, written[src], written[dst]) {
				continue
			}
		default:
			continue
		}
		gone[dst] = true
		for _, bl := range blocks {
			forEach(bl, func(s *stmt) {
				if s.kind == kAssignVar && s.b == dst {
					*s = stmt{kind: kNop, loc: s.loc}
					return
				}
				for _, o := range readOperands(s) {
					if *o == dst {
						*o = src
					}
				}
			})
		}
	}
	return len(gone) > 0
}

// place is a statement's place: its block and index.
type place struct {
	bl *block
	i  int
}

// readAfterWrite reports whether the one copy of src into dst (at cp) and
// every read of dst come after src's one value (given at w), in one pass
// of one block: w and cp in the same block, w first, and dst read only
// later in that block, or in blocks inside its later statements. Then
// when dst is read, src holds what it held at the copy (nothing gives it
// another value between), whatever runs that block again (a scan's body
// runs once a member). A scan gives its key and value (and a with the
// input) more than once: not such a write.
func readAfterWrite(blocks []*block, dst int32, w, cp place) bool {
	if w.bl != cp.bl || w.i >= cp.i {
		return false
	}
	if k := w.bl.stmts[w.i].kind; k == kScan || k == kWith {
		return false
	}
	reads := 0
	for _, bl := range blocks {
		forEach(bl, func(s *stmt) {
			for _, o := range readOperands(s) {
				if *o == dst {
					reads++
				}
			}
		})
	}
	after := 0
	for i := cp.i + 1; i < len(cp.bl.stmts); i++ {
		forEach(&block{stmts: cp.bl.stmts[i : i+1]}, func(s *stmt) {
			for _, o := range readOperands(s) {
				if *o == dst {
					after++
				}
			}
		})
	}
	return reads == after
}

// countCopies is the number of copies (AssignVar) into local l.
func countCopies(blocks []*block, l int32) int {
	n := 0
	for _, bl := range blocks {
		forEach(bl, func(s *stmt) {
			if s.kind == kAssignVar && s.b == l {
				n++
			}
		})
	}
	return n
}

// readAfterCopies reports whether every read of l comes after a copy
// into it: earlier in the read's block, or earlier in a block that holds
// the read's block (a block inside a statement runs when that statement
// does). The copy into l of a block inside another statement is not
// counted for the statements after that one: it may not have run.
func readAfterCopies(blocks []*block, l int32) bool {
	var walk func(bl *block, copied bool) bool
	walk = func(bl *block, copied bool) bool {
		for i := range bl.stmts {
			s := &bl.stmts[i]
			for _, o := range readOperands(s) {
				if *o == l && !copied {
					return false
				}
			}
			for _, inner := range s.blocks {
				if !walk(inner, copied) {
					return false
				}
			}
			if s.body != nil && !walk(s.body, copied) {
				return false
			}
			if s.kind == kAssignVar && s.b == l {
				copied = true
			}
		}
		return true
	}
	for _, bl := range blocks {
		if !walk(bl, false) {
			return false
		}
	}
	return true
}

// givenValues are the locals a statement gives a value (not those of the
// blocks in it). An append or insert changes the value its local holds,
// but gives the local no other: it is a read (see readOperands).
func givenValues(s *stmt) []int32 {
	switch s.kind {
	case kAssignInt, kAssignVarOnce, kAssignVar, kCallFunc, kCallBuiltin, kDot, kLen,
		kMakeArray, kMakeArrayItems, kMakeNull, kMakeNumberInt, kMakeObject, kMakeObjectItems, kMakeSet,
		kResetLocal, kWith:
		return []int32{s.b}
	case kScan:
		return []int32{s.b, s.c}
	}
	return nil
}

// readOperands are the operands a statement reads (not those of the blocks in
// it), as places to change: an append's, add's or insert's local among
// them, and an AssignVarOnce's target, which it compares with its value.
func readOperands(s *stmt) []*int32 {
	switch s.kind {
	case kArrayAppend, kEqual, kNotEqual, kSetAdd, kAssignVarOnce:
		return []*int32{&s.a, &s.b}
	case kAssignVar, kIsArray, kIsObject, kIsSet, kIsDefined, kIsUndefined, kLen, kResultSetAdd, kReturnLocal, kScan, kWith:
		return []*int32{&s.a}
	case kCallFunc, kCallBuiltin, kMakeObjectItems, kMakeArrayItems:
		out := make([]*int32, len(s.args))
		for i := range s.args {
			out[i] = &s.args[i]
		}
		return out
	case kDot:
		return []*int32{&s.a, &s.c}
	case kObjectInsert, kObjectInsertOnce:
		return []*int32{&s.a, &s.b, &s.c}
	}
	return nil
}
