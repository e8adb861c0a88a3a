package metrics

import (
	"strings"
	"sync"
)

// Label values that stand for several names.
const (
	// Other is the label value of a name outside the known set: a tool no
	// role, configuration or upstream names, an agent nobody configured.
	Other = "other"
	// None is the label value of an empty name (no reason, no role).
	None = "none"
	// AnyResource is the tool label of every resource read
	// (resource:<uri>): URIs are too many to be labels.
	AnyResource = "resource:*"
)

// The most names a label takes from each vocabulary; later names are
// Other. The sets are filled from the operator's configuration, the roles
// and the upstreams' lists, which a repository's files can add to (a role
// file may list any number of tool names): the bounds keep a series count
// that a project cannot blow up.
const (
	MaxTools        = 1000
	MaxRoles        = 200 // built-in and the user's
	MaxProjectRoles = 20  // a project's, which its agent can write
	MaxAgents       = 200
	MaxPolicies     = 50
	MaxUpstreams    = 100
)

// MaxDecisionSeries bounds the series of harness_decisions_total: past it,
// a decision whose labels make a new series is counted with its policy,
// role and tool as Other (its outcome and reason stay). The labels are
// each bounded, but their product is large, and an agent chooses the
// tools it calls, in any role it may take.
const MaxDecisionSeries = 5000

// vocabulary is a bounded set of names that may be label values.
type vocabulary struct {
	mu    sync.RWMutex
	known map[string]struct{}
	max   int
	// admit takes any name on first sight while there is room: for
	// names whose space is already bounded elsewhere (the custom
	// policies that loaded).
	admit bool
}

func newVocabulary(max int, admit bool, names ...string) *vocabulary {
	v := &vocabulary{known: map[string]struct{}{}, max: max, admit: admit}
	v.add(names...)
	return v
}

// add makes names known, while there is room.
func (v *vocabulary) add(names ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, n := range names {
		if n == "" || len(n) > 256 {
			continue
		}
		if _, ok := v.known[n]; !ok && len(v.known) < v.max {
			v.known[n] = struct{}{}
		}
	}
}

// label is name as a label value: itself when known (or admitted), None
// when empty, else Other.
func (v *vocabulary) label(name string) string {
	if name == "" {
		return None
	}
	v.mu.RLock()
	_, ok := v.known[name]
	v.mu.RUnlock()
	if ok {
		return name
	}
	if v.admit {
		v.add(name)
		v.mu.RLock()
		_, ok = v.known[name]
		v.mu.RUnlock()
		if ok {
			return name
		}
	}
	return Other
}

// toolLabel is a tool's label: a known name, AnyResource for a resource
// read of a URI nobody listed as a tool name, else Other.
func (v *vocabulary) toolLabel(name string) string {
	l := v.label(name)
	if l == Other && strings.HasPrefix(name, "resource:") {
		return AnyResource
	}
	return l
}

// fixed is a label of a closed set: the value when in it, else Other.
func fixed(set []string, value string) string {
	if value == "" {
		return None
	}
	for _, s := range set {
		if s == value {
			return value
		}
	}
	return Other
}

// other is the policy label of a decision folded into Other: "" stays ""
// (no policy reason), any name is Other.
func (v *vocabulary) other(label string) string {
	if label == "" {
		return ""
	}
	return Other
}

// seriesCap admits label tuples up to a number of distinct ones.
type seriesCap struct {
	mu   sync.Mutex
	seen map[[5]string]struct{}
	max  int
}

func newSeriesCap(max int) *seriesCap {
	return &seriesCap{seen: map[[5]string]struct{}{}, max: max}
}

// admit says whether the tuple is a series already, or a new one there
// is room for (which it then is).
func (c *seriesCap) admit(a, b, d, e, f string) bool {
	k := [5]string{a, b, d, e, f}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[k]; ok {
		return true
	}
	if len(c.seen) >= c.max {
		return false
	}
	c.seen[k] = struct{}{}
	return true
}
