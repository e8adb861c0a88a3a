package plan

import (
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// matches remembers regex.match's answers across a program's evaluations.
// The built-in is a function of its two strings alone, and the harness's
// policy asks it the same questions on every call (does this tool name
// match the role's lists, this argument the protected locations): the
// answer is OPA's, computed once, then read back for a fraction of a
// match's cost. An agent chooses the strings (and a custom policy may
// build a pattern from them), so what is kept is bounded: subjects of at
// most maxMatchString bytes, at most maxMatches answers and maxMatchBytes
// of keys (a pattern of the policy's data is one string however many keys
// hold it, but is counted in each), all forgotten when full.
type matches struct {
	mu    sync.RWMutex
	m     map[matchKey]bool
	bytes int
}

type matchKey struct{ pattern, s string }

const (
	maxMatches     = 1 << 12
	maxMatchString = 256
	maxMatchBytes  = 4 << 20
)

// memoised are the built-ins whose answers matches keeps.
var memoised = map[string]bool{"regex.match": true}

// keyOf is the key of a call with args, and whether it may be kept.
func keyOf(args []*ast.Term) (matchKey, bool) {
	p, ok1 := args[0].Value.(ast.String)
	s, ok2 := args[1].Value.(ast.String)
	if !ok1 || !ok2 || len(s) > maxMatchString || len(p) > maxMatchBytes/64 {
		return matchKey{}, false
	}
	return matchKey{string(p), string(s)}, true
}

func (m *matches) get(k matchKey) (answer, ok bool) {
	m.mu.RLock()
	answer, ok = m.m[k]
	m.mu.RUnlock()
	return answer, ok
}

func (m *matches) put(k matchKey, answer bool) {
	// A key is copied: an argument may be a slice of a far larger string
	// (a submatch of an agent's command), which the memo would otherwise
	// keep alive for as long as the program.
	k = matchKey{strings.Clone(k.pattern), strings.Clone(k.s)}
	size := len(k.pattern) + len(k.s)
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxMatches || m.bytes+size > maxMatchBytes {
		m.m, m.bytes = make(map[matchKey]bool, 64), 0
	}
	m.m[k] = answer
	m.bytes += size
	m.mu.Unlock()
}
