package policy

import (
	"fmt"
	"regexp/syntax"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/agentharness/harness/compiler"
)

// maxRegexSteps bounds the work of one call of a built-in that matches a
// regular expression against a text: Go's regexp takes, at worst, a step
// for each instruction of the pattern's program and byte of the text
// (some 2.5 ns), and a pattern of a few bytes may have a long program
// ((?:\pL\pL){1000} has 2,000 instructions). Such a call runs inside one
// call of the built-in, where no deadline is looked at: a pattern of 100
// bytes on an argument of 200 KB was 15 s. Past the bound (about a second
// at worst) the call fails, and its decision with it (a deny); a pattern
// of 150 instructions may still match a text of 2.5 MB. The harness's own
// rules match the self-protection's expressions (programs of literals,
// a few hundred instructions) against every string of a call's arguments,
// a file's content of many MB among them: those calls are left unbounded,
// the expressions of a document the engine was given in the harness's
// own modules, not a pattern a custom policy gives one of the harness's
// functions (data.harness.matches). Its other patterns are short, and
// bounded like a custom policy's.
const maxRegexSteps = 400_000_000

// The built-ins that match a pattern against a text, by the operands of
// the pattern and the text.
var regexBuiltins = []struct {
	decl          *ast.Builtin
	pattern, text int
}{
	{ast.RegexMatch, 0, 1},
	{ast.RegexFind, 0, 1},
	{ast.RegexFindAllStringSubmatch, 0, 1},
	{ast.RegexSplit, 0, 1},
	{ast.RegexReplace, 1, 0},
}

func init() {
	for _, b := range regexBuiltins {
		opa := topdown.GetBuiltin(b.decl.Name)
		topdown.RegisterBuiltinFunc(b.decl.Name, func(bctx topdown.BuiltinContext, operands []*ast.Term, iter func(*ast.Term) error) error {
			if len(operands) > b.pattern && len(operands) > b.text {
				p, ok1 := operands[b.pattern].Value.(ast.String)
				s, ok2 := operands[b.text].Value.(ast.String)
				// The steps first: a call within the bound (nearly every
				// call) looks up one program size and nothing else.
				if ok1 && ok2 {
					steps := regexProgram(string(p)) * (len(s) + 1)
					if (steps > maxRegexSteps || steps < 0) && !(harnessPattern(string(p)) && ownCall(bctx)) {
						return fmt.Errorf("a pattern whose program has %d instructions, on a text of %d bytes: more than %d steps", regexProgram(string(p)), len(s), maxRegexSteps)
					}
				}
			}
			return opa(bctx, operands, iter)
		})
	}
}

// ownCall reports whether a built-in's call is in one of the harness's own
// modules (by the file its location names, as topdown and the plan tell
// it); a call of unknown location is not.
func ownCall(bctx topdown.BuiltinContext) bool {
	if bctx.Location == nil {
		return false
	}
	ownOnce.Do(func() {
		own = map[string]bool{}
		for _, m := range Modules() {
			own[m.Location()] = true
		}
	})
	return own[bctx.Location.File]
}

var (
	ownOnce sync.Once
	own     map[string]bool
)

// harnessPatterns are the self-protection's expressions of the documents
// engines were given (see registerPatterns), up to maxRegexPrograms of
// them: past it, a new one is bounded like any pattern.
var (
	harnessPatterns    sync.Map // string -> bool
	harnessPatternsLen atomic.Int64
)

// registerPatterns notes the self-protection's expressions of doc.
func registerPatterns(doc *compiler.Document) {
	if doc == nil {
		return
	}
	p := doc.Config.Protect
	for _, re := range append(append([]string{p.Suspect.Regex}, p.Locations...), p.Commands...) {
		if harnessPatternsLen.Load() >= maxRegexPrograms {
			return
		}
		if _, loaded := harnessPatterns.LoadOrStore(re, true); !loaded {
			harnessPatternsLen.Add(1)
		}
	}
}

func harnessPattern(p string) bool {
	_, ok := harnessPatterns.Load(p)
	return ok
}

// regexPrograms are the program sizes of the patterns met, up to
// maxRegexPrograms of them (past it, a size is worked out each time).
var regexPrograms = keptAnswers[int]{max: maxRegexPrograms}

const maxRegexPrograms = 4096

// regexProgram is about how many instructions the program of the pattern
// p has (see programSize); a pattern that does not parse, its length (the
// built-in refuses it).
func regexProgram(p string) int {
	return regexPrograms.get(p, func(p string) int {
		n := len(p) + 1
		if re, err := syntax.Parse(p, syntax.Perl); err == nil {
			n = max(n, programSizeOf(re, maxRegexSteps+1))
		}
		return n
	})
}
