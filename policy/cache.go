package policy

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// The decision cache: a call that differs from an earlier one only in its
// usage, within the same budget band, gets the earlier call's decision
// without another evaluation.
//
// Why that is the policy's decision too. The cache is per generation of
// data and policy (a reload starts an empty one). A decision is a function
// of the input (the data is fixed within a generation, and a policy that
// calls a built-in whose result is not a function of its arguments turns
// the cache off). The key holds every key of the input that the compiled
// modules read (reads.go finds them in the modules themselves), exactly,
// except the usage, of which it holds the band: for each dimension of the
// session's and of the agent's budget, whether it is below its warning
// and exhaustion thresholds (clear), and its usage itself when it is not;
// for a clear shell dimension, whether the shell budget admits one more
// call (rule 7), and the shell usage itself when it does not (the
// refusal's message gives it). Within a band every comparison the policy
// makes on usage (is_number, >= 0, whole, < warn_at, < exhausted_at, +1 <=
// admits) comes out the same, so every rule decides the same, and the
// only figures that follow the usage are the budget's used and percent,
// which Go fills in (withUsage, percentOf: rule 4). No reason or warning
// other than the shell refusal is computed from the usage of a clear
// dimension: a budget's reasons and warnings are each of one dimension
// above OK, whose usage the key holds. A custom policy that reads the
// usage (input.budget, input.agent_budget, the input whole, or a document
// of the harness's rules) has the usage in its key exactly.
// TestCacheAgreesWithTheEngine holds the cached and the uncached engine
// equal over a grid of calls and FuzzCacheAgrees over arbitrary ones.
//
// Only decisions an evaluation made are kept: a deny for an evaluation
// error or a deadline never is.

// maxCacheEntries bounds the cache: full, it starts again empty.
const maxCacheEntries = 4096

// maxKeyBytes bounds a key: calls with larger arguments are not cached.
const maxKeyBytes = 4096

// decisionCache holds one generation's cached decisions.
type decisionCache struct {
	// off: a policy calls a non-deterministic built-in.
	off bool
	// fields are the input keys in the key, in a fixed order; exactUsage
	// and exactAgentUsage put the usage itself in the key.
	fields          []string
	exactUsage      bool
	exactAgentUsage bool

	mu sync.RWMutex
	m  map[string]contract.Decision
}

// keyFields are the input keys a call can have (inputValue), in key order;
// shell_policy is the role's (a function of input.role in a generation).
var keyFields = []string{"role", "tool", "upstream", "upstream_tool", "arguments", "session", "agent", "project", "resolved"}

// newDecisionCache makes the cache for the harness's compiled modules and
// the custom policies' ones.
func newDecisionCache(harness, custom []*ast.Module) *decisionCache {
	own, theirs := inputReads(harness, false), inputReads(custom, true)
	c := &decisionCache{off: own.nondeterministic || theirs.nondeterministic, m: map[string]contract.Decision{}}
	all := own.all || theirs.all
	for _, f := range keyFields {
		if all || own.keys[f] || theirs.keys[f] {
			c.fields = append(c.fields, f)
		}
	}
	// The harness's own reads of the usage are the band's comparisons;
	// anyone else's may be anything.
	c.exactUsage = all || theirs.keys["budget"]
	c.exactAgentUsage = all || theirs.keys["agent_budget"]
	return c
}

// key is the cache key of in, and whether in may be cached at all: its
// usage is in the band, and its arguments are of types the key can hold.
func (c *decisionCache) key(doc *compiler.Document, in contract.Input) (string, bool) {
	if c.off {
		return "", false
	}
	buf, ok := band(make([]byte, 0, 128), doc, in)
	if !ok {
		return "", false
	}
	for _, f := range c.fields {
		switch f {
		case "role":
			buf = appendString(buf, in.Role)
		case "tool":
			buf = appendString(buf, in.Tool)
		case "upstream":
			buf = appendString(buf, in.Upstream)
		case "upstream_tool":
			buf = appendString(buf, in.UpstreamTool)
		case "arguments":
			var ok bool
			if buf, ok = appendValue(buf, in.Arguments); !ok {
				return "", false
			}
		case "session":
			buf = appendString(buf, in.Session)
		case "agent":
			buf = appendString(buf, in.Agent)
		case "project":
			buf = appendString(buf, in.Project)
		case "resolved":
			buf = appendResolved(buf, in.Resolved)
		}
		if len(buf) > maxKeyBytes {
			return "", false
		}
	}
	if c.exactUsage {
		buf = appendUsage(buf, in.Budget)
	}
	if c.exactAgentUsage {
		if in.AgentBudget == nil {
			buf = append(buf, 'n')
		} else {
			buf = appendUsage(append(buf, 'u'), *in.AgentBudget)
		}
	}
	return string(buf), true
}

// get returns the cached decision for key, with in's budget figures.
func (c *decisionCache) get(key string, in contract.Input) (contract.Decision, bool) {
	c.mu.RLock()
	d, ok := c.m[key]
	c.mu.RUnlock()
	if !ok {
		return d, false
	}
	return withUsage(d, in), true
}

// put keeps d, an evaluated decision of call in with key, if it is what
// the band says it must be: each dimension the band has clear at level OK.
func (c *decisionCache) put(key string, d contract.Decision, doc *compiler.Document, in contract.Input) {
	dims := func(tokens, shell, cost *contract.Dimension) map[string]*contract.Dimension {
		return map[string]*contract.Dimension{"tokens": tokens, "shell": shell, "cost": cost}
	}
	if !clearLevelsOK(doc.Roles[in.Role].Thresholds, in.Budget, dims(&d.Budget.Tokens, &d.Budget.Shell, &d.Budget.Cost)) {
		return
	}
	if b, ok := doc.AgentBudget(in.Agent); ok {
		a := d.AgentBudget
		if a == nil || in.AgentBudget == nil || !clearLevelsOK(b.Thresholds, *in.AgentBudget, dims(a.Tokens, a.Shell, a.Cost)) {
			return
		}
	}
	// The cache keeps its own copy: the caller's is the caller's.
	d.Reasons, d.Warnings = slices.Clone(d.Reasons), slices.Clone(d.Warnings)
	if d.AgentBudget != nil {
		a := *d.AgentBudget
		d.AgentBudget = &a
	}
	c.mu.Lock()
	if len(c.m) >= maxCacheEntries {
		clear(c.m)
	}
	c.m[key] = d
	c.mu.Unlock()
}

// band appends to buf in's budget band (see the top of this file), and
// reports whether in's usage may be cached at all: an unknown role, an
// agent budget without the agent's usage, negative usage or usage so large
// that its percentage would overflow is not.
func band(buf []byte, doc *compiler.Document, in contract.Input) ([]byte, bool) {
	r, ok := doc.Roles[in.Role]
	if !ok {
		return buf, false
	}
	// Each band goes length first: the role's and the agent's are told
	// apart whatever their marks (a role's band may end with its cost,
	// and an agent's begin with its own).
	var sub []byte
	if sub, ok = bandOf(nil, r.Thresholds, in.Budget); !ok {
		return buf, false
	}
	buf = appendString(buf, string(sub))
	b, ok := doc.AgentBudget(in.Agent)
	if !ok {
		return append(buf, 'n'), true
	}
	if in.AgentBudget == nil {
		return buf, false
	}
	if sub, ok = bandOf(nil, b.Thresholds, *in.AgentBudget); !ok {
		return buf, false
	}
	return appendString(append(buf, 'y'), string(sub)), true
}

// bandOf appends the band of u under thresholds (see band).
func bandOf(buf []byte, thresholds map[string]compiler.Threshold, u contract.Usage) ([]byte, bool) {
	// A dimension without thresholds (one an agent's budget does not
	// bound) is only checked to be a count.
	if u.Tokens < 0 || u.Shell < 0 || u.CostMicros < 0 {
		return buf, false
	}
	for _, dim := range dimensions {
		t, ok := thresholds[dim]
		if !ok {
			continue
		}
		used := map[string]int64{"tokens": u.Tokens, "shell": u.Shell, "cost": u.CostMicros}[dim]
		switch {
		case used > math.MaxInt64/100:
			return buf, false
		case !clearAt(t, used):
			// Past a threshold: the usage itself, after a mark of the
			// dimension's own.
			buf = binary.AppendVarint(append(buf, "TSC"[slices.Index(dimensions, dim)]), used)
		case dim == "shell":
			if t.Admits != nil && used+1 > *t.Admits {
				buf = binary.AppendVarint(append(buf, 'r'), used)
			} else {
				buf = append(buf, 'a')
			}
		}
	}
	for dim := range thresholds {
		if dim != "tokens" && dim != "shell" && dim != "cost" {
			return buf, false
		}
	}
	return buf, true
}

// dimensions are a budget's, in the band's order.
var dimensions = []string{"tokens", "shell", "cost"}

// clearLevelsOK reports whether each dimension of thresholds that usage u
// has clear is at level OK among dims (a decision's), as the band claims.
func clearLevelsOK(thresholds map[string]compiler.Threshold, u contract.Usage, dims map[string]*contract.Dimension) bool {
	used := map[string]int64{"tokens": u.Tokens, "shell": u.Shell, "cost": u.CostMicros}
	for dim, t := range thresholds {
		if d := dims[dim]; clearAt(t, used[dim]) && (d == nil || d.Level != contract.LevelOK) {
			return false
		}
	}
	return true
}

// clearAt reports whether used is below every level threshold of t.
func clearAt(t compiler.Threshold, used int64) bool {
	switch {
	case used >= t.WarnAt:
		return false
	case t.ExhaustedAt != nil && used >= *t.ExhaustedAt:
		return false
	}
	return true
}

// withUsage is d with the used and percent of u's usage: d.Budget's from
// in.Budget, d.AgentBudget's from in.AgentBudget; its slices are copies.
func withUsage(d contract.Decision, in contract.Input) contract.Decision {
	d.Reasons = slices.Clone(d.Reasons)
	d.Warnings = slices.Clone(d.Warnings)
	fill(&d.Budget.Tokens, in.Budget.Tokens)
	fill(&d.Budget.Shell, in.Budget.Shell)
	fill(&d.Budget.Cost, in.Budget.CostMicros)
	if a := d.AgentBudget; a != nil {
		c := *a
		u := contract.Usage{}
		if in.AgentBudget != nil {
			u = *in.AgentBudget
		}
		for _, p := range []struct {
			dim  **contract.Dimension
			used int64
		}{{&c.Tokens, u.Tokens}, {&c.Shell, u.Shell}, {&c.Cost, u.CostMicros}} {
			if *p.dim != nil {
				dim := **p.dim
				fill(&dim, p.used)
				*p.dim = &dim
			}
		}
		d.AgentBudget = &c
	}
	return d
}

// fill sets the used and percent of a dimension.
func fill(d *contract.Dimension, used int64) {
	d.Used = used
	d.Percent = percentOf(used, d.Limit)
}

// percentOf is rule 4: floor(used*100/limit); for a limit of 0, 0% unused
// and 100% used. used*100 does not overflow (bandOf).
func percentOf(used, limit int64) int64 {
	switch {
	case limit > 0:
		return used * 100 / limit
	case used == 0:
		return 0
	}
	return 100
}

// appendString appends s, length first.
func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// appendUsage appends the three counts of u.
func appendUsage(buf []byte, u contract.Usage) []byte {
	buf = binary.AppendVarint(buf, u.Tokens)
	buf = binary.AppendVarint(buf, u.Shell)
	return binary.AppendVarint(buf, u.CostMicros)
}

// appendValue appends an argument value, each kind with its own tag and
// every variable-length part length first, so that two values with the
// same bytes are the same value, and so the same input to the policy
// (ast.InterfaceToValue is a function). Kinds the key does not know are
// not cached (false).
func appendValue(buf []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(buf, 'n'), true
	case bool:
		if v {
			return append(buf, 't'), true
		}
		return append(buf, 'f'), true
	case string:
		return appendString(append(buf, 's'), v), true
	case json.Number:
		return appendString(append(buf, 'N'), string(v)), true
	case float64:
		return binary.BigEndian.AppendUint64(append(buf, 'd'), math.Float64bits(v)), true
	case int:
		return binary.AppendVarint(append(buf, 'i'), int64(v)), true
	case int64:
		return binary.AppendVarint(append(buf, 'i'), v), true
	case []any:
		buf = binary.AppendUvarint(append(buf, 'a'), uint64(len(v)))
		for _, e := range v {
			var ok bool
			if buf, ok = appendValue(buf, e); !ok || len(buf) > maxKeyBytes {
				return buf, false
			}
		}
		return buf, true
	case map[string]any:
		buf = binary.AppendUvarint(append(buf, 'o'), uint64(len(v)))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			buf = appendString(buf, k)
			var ok bool
			if buf, ok = appendValue(buf, v[k]); !ok || len(buf) > maxKeyBytes {
				return buf, false
			}
		}
		return buf, true
	}
	return buf, false
}

// The levels of usages in the band are every one OK (that is what the band
// is): a usage there is measured once per role, agent and band, and the
// policy's answer kept, as the decision cache keeps decisions. A charge
// asks the levels of the usage before it and after it, to tell budget
// crossings; most charges stay in the band.
type levelsCache struct {
	mu sync.RWMutex
	m  map[string]Levels
}

// levelsKey is the key of u: its role, its agent and its band; false when
// u is not in the band.
func levelsKey(doc *compiler.Document, u RoleUsage) (string, bool) {
	buf := appendString(appendString(make([]byte, 0, 64), u.Role), u.Agent)
	buf, ok := band(buf, doc, contract.Input{Role: u.Role, Budget: u.Usage, Agent: u.Agent, AgentBudget: u.AgentUsage})
	return string(buf), ok
}

// get returns the kept levels of every usage, if it has them all.
func (c *levelsCache) get(doc *compiler.Document, usages []RoleUsage) ([]Levels, bool) {
	out := make([]Levels, len(usages))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, u := range usages {
		k, ok := levelsKey(doc, u)
		if !ok {
			return nil, false
		}
		if out[i], ok = c.m[k]; !ok {
			return nil, false
		}
		out[i].Agent = maps.Clone(out[i].Agent)
	}
	return out, true
}

// put keeps the levels of the usages in the band, when the policy says
// what the band means: every level OK.
func (c *levelsCache) put(doc *compiler.Document, usages []RoleUsage, levels []Levels) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = map[string]Levels{}
	}
	for i, u := range usages {
		k, ok := levelsKey(doc, u)
		lv := levels[i]
		if !ok || !lv.Defined || lv.Signal != contract.LevelOK || lv.Tokens != contract.LevelOK || lv.Shell != contract.LevelOK || lv.Cost != contract.LevelOK {
			continue
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(lv.Agent)), func(l string) bool { return l != contract.LevelOK }) {
			continue
		}
		lv.Agent = maps.Clone(lv.Agent)
		c.m[k] = lv
	}
}

// appendResolved appends input.resolved: its paths in order, each with
// its resolutions or n for null.
func appendResolved(buf []byte, r map[string][]string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(r)))
	for _, path := range slices.Sorted(maps.Keys(r)) {
		buf = appendString(buf, path)
		real := r[path]
		if real == nil {
			buf = append(buf, 'n')
			continue
		}
		buf = binary.AppendUvarint(append(buf, 'a'), uint64(len(real)))
		for _, s := range real {
			buf = appendString(buf, s)
		}
	}
	return buf
}
