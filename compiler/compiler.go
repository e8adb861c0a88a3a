package compiler

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/roles"
)

// SchemaVersion is the version of the data document's shape. The Rego policy
// checks it; bump it with any change the policy must know about.
const SchemaVersion = 4

// Root is the data path under which the document lives (data.harness) and
// the bundle root.
const Root = "harness"

// Config is what the compiler needs beyond roles.
type Config struct {
	// ShellTools are counted against the shell budget and governed by
	// shell_policy.
	ShellTools []string
	// ExemptTools skip tool lists and budgets, so an agent can always see
	// its role and budget.
	ExemptTools []string
	// EditTools are patterns of the tools that change files (matched
	// without regard to case), which the self-protection rules watch.
	EditTools []string
	// AgentBudgets are the agents' budgets across their sessions, by
	// agent name; AnyAgent's applies to every agent without one.
	AgentBudgets map[string]AgentBudget
	// Protect is what the self-protection rules refuse to touch.
	Protect Protect
}

// AnyAgent names, among the agent budgets, the one of every agent without
// a budget of its own.
const AnyAgent = "*"

// AgentBudget is one agent's budget across all its sessions, per period.
// A nil limit leaves that dimension unbounded.
type AgentBudget struct {
	// Period is "day", "week", "month" (in UTC) or "total".
	Period                    string
	Tokens, Shell, CostMicros *int64
	WarnPercent, BlockPercent int64
}

// Periods are the agent budgets' periods.
var Periods = []string{"day", "week", "month", "total"}

// Protect says what the self-protection rules keep from the agent: its
// edits and shell commands may not touch the harness's own files (roles,
// policies and configuration, the ledger and logs, Claude Code's settings
// that hold the hook), and its shell commands may not run the operator's
// verbs.
type Protect struct {
	// Off turns the rules off (the user's configuration only).
	Off bool
	// Paths are absolute files and directories of the harness.
	Paths []string
	// Home is the user's home directory, for paths written with ~ or $HOME.
	Home string
	// Project is the project's root: it and the directories above it are
	// the agent's, so a command that names them is no command on a
	// protected path below them (ProtectDoc.Above).
	Project string
}

// DefaultConfig is the contract's configuration: shell tools ctx_shell and
// ctx_execute, exempt tool ctx_session, the default edit tools, no agent
// budgets, self-protection on.
func DefaultConfig() Config {
	return Config{
		ShellTools:  slices.Clone(contract.DefaultShellTools),
		ExemptTools: slices.Clone(contract.DefaultExemptTools),
		EditTools:   slices.Clone(contract.DefaultEditTools),
	}
}

// Document is the data the policy reads at data.harness.
type Document struct {
	SchemaVersion int                `json:"schema_version"`
	Config        ConfigDoc          `json:"config"`
	Roles         map[string]RoleDoc `json:"roles"`
	// Ceiling is the ceiling of agents without a max_role: the least upper
	// bound of the non-privileged built-in roles (every tool, the highest
	// of their limits and block percentages, shell policy track), with the
	// roles within it.
	Ceiling CeilingDoc `json:"ceiling"`
	// Agents are the agents' budgets, by agent name (AnyAgent: every
	// agent without one).
	Agents map[string]AgentDoc `json:"agents"`
}

// AgentBudget is the budget that applies to agent: its own, else that of
// every agent (AnyAgent); ok is false when none does. The policy makes the
// same choice (a test holds the two equal).
func (d *Document) AgentBudget(agent string) (AgentBudgetDoc, bool) {
	if a, ok := d.Agents[agent]; ok {
		return a.Budget, true
	}
	a, ok := d.Agents[AnyAgent]
	return a.Budget, ok
}

// CeilingDoc is the ceiling of agents without a max_role.
type CeilingDoc struct {
	Limits LimitsDoc `json:"limits"`
	// Covers are the roles within it.
	Covers map[string]bool `json:"covers"`
}

// AgentDoc is what the policy knows of an agent.
type AgentDoc struct {
	Budget AgentBudgetDoc `json:"budget"`
}

// AgentBudgetDoc is an agent's budget: its period, and the limits and
// thresholds of the dimensions it bounds (the others are absent).
type AgentBudgetDoc struct {
	Period       string               `json:"period"`
	Limits       map[string]int64     `json:"limits"`
	Thresholds   map[string]Threshold `json:"thresholds"`
	WarnPercent  int64                `json:"warn_percent"`
	BlockPercent int64                `json:"block_percent"`
}

// ConfigDoc holds tool sets, as objects of name → true, and what the
// self-protection rules guard.
type ConfigDoc struct {
	ShellTools  map[string]bool `json:"shell_tools"`
	ExemptTools map[string]bool `json:"exempt_tools"`
	// ExemptByOrigin are the exempt tools by the upstream a tool comes
	// from: only the harness's own ("") are.
	ExemptByOrigin map[string]map[string]bool `json:"exempt_by_origin"`
	// EditTools are patterns, lower case: a tool whose lower-cased name
	// matches one changes files.
	EditTools Matcher    `json:"edit_tools"`
	Protect   ProtectDoc `json:"protect"`
}

// ProtectDoc is what the self-protection rules guard.
type ProtectDoc struct {
	Enabled bool `json:"enabled"`
	// Paths are absolute paths of the harness's own files and
	// directories; a path argument under one is refused.
	Paths []string `json:"paths"`
	// Locations are regular expressions of the harness's files wherever
	// they are (a .lean-ctx directory, the state directory, Claude Code's
	// settings), for paths the harness cannot resolve (relative ones, or
	// in shell commands).
	Locations []string `json:"locations"`
	// Commands are regular expressions of the operator's verbs in a
	// shell command.
	Commands []string `json:"commands"`
	Home     string   `json:"home"`
	// Above are the directories above the protected paths, each with the
	// path below it: a shell command that names one and holds the path
	// below it, or a directory on the way to it, as a word of its own
	// reaches the protected path from there (cd ~/.local/state && rm -rf
	// lean-ctx).
	Above []Above `json:"above"`
	// Suspect tells with one regex.match that a string is clear of all
	// of the above.
	Suspect Suspect `json:"suspect"`
}

// Above is a directory above a protected path, other than the root, the
// home directory's ancestors, and the project with the directories above it.
type Above struct {
	Dir string `json:"dir"`
	// Rest is the protected path below Dir.
	Rest string `json:"rest"`
	// Least is how many of Rest's segments a word must hold: 2 from the
	// home directory (.local/state, not .local), else 1.
	Least int `json:"least"`
}

// Suspect is one regular expression that every string the
// self-protection rules would refuse holds a match of (Locations,
// Commands, and each path as a command may write it), and what it was
// made of: the policy trusts it only while that is what the document
// holds (one edited by hand is decided by the rules one by one).
type Suspect struct {
	Regex string    `json:"regex"`
	Of    SuspectOf `json:"of"`
}

// SuspectOf is what a Suspect was made of.
type SuspectOf struct {
	Paths     []string `json:"paths"`
	Locations []string `json:"locations"`
	Commands  []string `json:"commands"`
	Home      string   `json:"home"`
	Above     []Above  `json:"above"`
}

// ProtectedLocations are the regular expressions of ProtectDoc.Locations:
// a .lean-ctx directory; lean-ctx's harness, roles and policies
// directories; a .claude directory named whole (a command that cds into
// it, copies, extracts or syncs into it, or removes or moves it reaches
// the settings in it without naming them); and a settings.json or
// settings.local.json after a .claude directory, in any path or command
// (.claude//settings.json, .claude/commands/../settings.json, cd
// .claude/x && … ../settings.json). The other files of a .claude
// directory (.claude/commands/x.md) stay the agent's.
var ProtectedLocations = []string{
	`(^|[^A-Za-z0-9_.-])\.lean-ctx([/\\]|$|[^A-Za-z0-9_-])`,
	`(^|[/\\])lean-ctx[/\\](harness|roles|policies)([/\\]|$|[^A-Za-z0-9_-])`,
	`(^|[^A-Za-z0-9_.-])\.claude[/\\]?($|[^A-Za-z0-9_./\\-])`,
	`(^|[^A-Za-z0-9_.-])\.claude[/\\]([\s\S]*[^A-Za-z0-9_-])?settings(\.local)?\.json`,
}

// SuspectSegments are the suspect expression's alternatives for the
// strings the self-protection rules read otherwise than they are written:
// one with an empty or . segment, and a path from the root, the home or a
// file:// URI with a .. segment.
var SuspectSegments = []string{
	`/\.?/`,
	`^(/|~|\$\{?HOME|file:)[\s\S]*\.\.(/|$)`,
}

// OperatorCommands are the regular expressions of ProtectDoc.Commands: the
// operator's verbs (contract.OperatorVerbs: harness role set, budget
// reset, hook install) as words anywhere in a command, however the binary
// is named or reached.
func OperatorCommands() []string {
	out := make([]string, len(contract.OperatorVerbs))
	for i, v := range contract.OperatorVerbs {
		out[i] = `(^|[^A-Za-z0-9_-])` + strings.Join(strings.Fields(v), `\s+`) + `([^A-Za-z0-9_-]|$)`
	}
	return out
}

// RoleDoc is one role as the policy sees it.
type RoleDoc struct {
	// Source is where the role was defined: "built-in", "user" or "project".
	Source      string  `json:"source"`
	Description string  `json:"description"`
	ShellPolicy string  `json:"shell_policy"`
	Privileged  bool    `json:"privileged"`
	Allowed     Matcher `json:"allowed"`
	Denied      Matcher `json:"denied"`
	// Ask are the tools whose calls wait for a person's approval when
	// they would be allowed.
	Ask    Matcher   `json:"ask"`
	Limits LimitsDoc `json:"limits"`
	// Thresholds are the limits turned into usage counts, per dimension
	// ("tokens", "shell", "cost"), so that the policy compares integers
	// instead of doing arithmetic on every call.
	Thresholds map[string]Threshold `json:"thresholds"`
	IO         map[string]any       `json:"io"`
	// Covers are the roles no more privileged than this one, itself
	// included (see Within): what an agent whose most privileged role is
	// this one may hold.
	Covers map[string]bool `json:"covers"`
}

// Threshold gives, for one dimension, the usage at which its level changes.
// For integer usage u, limit L and percentage p, u*100 >= L*p exactly when
// u >= ceil(L*p/100).
type Threshold struct {
	// WarnAt is the usage from which the level is WARNING: ceil(L*warn/100),
	// or 1 for a limit of 0 (any use of a dimension the role does not grant).
	WarnAt int64 `json:"warn_at"`
	// ExhaustedAt is the usage from which the level is EXHAUSTED:
	// ceil(L*block/100). Absent when the limit is 0 or blocking is off.
	ExhaustedAt *int64 `json:"exhausted_at,omitempty"`
	// Admits is how many calls in all the budget admits, floor(L*block/100)
	// (rule 7; used for the shell dimension). Absent when blocking is off.
	Admits *int64 `json:"admits,omitempty"`
	// OKBelow is the usage below which the level is OK: the lesser of
	// WarnAt and ExhaustedAt.
	OKBelow int64 `json:"ok_below"`
	// PercentOf is what usage below OKBelow is a percentage of (rule 4):
	// the limit, or 1 for a limit of 0 (whose usage is then 0).
	PercentOf int64 `json:"percent_of"`
}

// NewThreshold computes the thresholds of a dimension with limit, warn and
// block percentages as in a role file (block above 100: never block).
func NewThreshold(limit, warn, block int64) Threshold {
	t := Threshold{WarnAt: ceilDiv(limit*warn, 100)}
	if limit == 0 {
		t.WarnAt = 1
	}
	if block <= 100 {
		admits := limit * block / 100
		t.Admits = &admits
		if limit > 0 {
			at := ceilDiv(limit*block, 100)
			t.ExhaustedAt = &at
		}
	}
	t.OKBelow, t.PercentOf = t.WarnAt, max(limit, 1)
	if t.ExhaustedAt != nil {
		t.OKBelow = min(t.WarnAt, *t.ExhaustedAt)
	}
	return t
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// LimitsDoc are a role's limits, in integers (money in micro-dollars).
type LimitsDoc struct {
	Tokens       int64 `json:"tokens"`
	Shell        int64 `json:"shell"`
	CostMicros   int64 `json:"cost_micros"`
	WarnPercent  int64 `json:"warn_percent"`
	BlockPercent int64 `json:"block_percent"`
}

// Matcher is a list of tool patterns. Regex matches exactly the names the
// list matches, so that the policy decides whether a tool is on the list
// with one regex.match, whatever the list holds; All and Exact say the same
// of the list's commonest shapes for people and for the compiler's own
// reasoning.
type Matcher struct {
	All   bool            `json:"all"`   // "*" is in the list
	Exact map[string]bool `json:"exact"` // the names without '*'
	// Regex is the list as one RE2 expression: anchored, each pattern's
	// '*' as .* (newlines included) and every other character literal;
	// an empty list's matches nothing.
	Regex    string   `json:"regex"`
	Patterns []string `json:"patterns"` // the list as written, sorted, for messages
}

// Compile builds the data document for set under cfg.
func Compile(set *roles.Set, cfg Config) *Document {
	doc := &Document{
		SchemaVersion: SchemaVersion,
		Config: ConfigDoc{
			ShellTools:     toSet(cfg.ShellTools),
			ExemptTools:    toSet(cfg.ExemptTools),
			ExemptByOrigin: map[string]map[string]bool{"": toSet(cfg.ExemptTools)},
			EditTools:      NewMatcher(lower(cfg.EditTools)),
			Protect:        protectDoc(cfg.Protect),
		},
		Roles:  map[string]RoleDoc{},
		Agents: map[string]AgentDoc{},
	}
	for name, b := range cfg.AgentBudgets {
		doc.Agents[name] = AgentDoc{Budget: agentBudgetDoc(b)}
	}
	for _, r := range set.All() {
		allowed, denied := NewMatcher(r.Allowed), NewMatcher(r.Denied)
		io := r.IO
		if io == nil {
			io = map[string]any{}
		}
		doc.Roles[r.Name] = RoleDoc{
			Source:      string(r.Source),
			Description: r.Description,
			ShellPolicy: string(r.ShellPolicy),
			Privileged:  r.Privileged,
			Allowed:     allowed,
			Denied:      denied,
			Ask:         NewMatcher(r.Ask),
			Limits: LimitsDoc{
				Tokens:       r.Limits.MaxContextTokens,
				Shell:        r.Limits.MaxShellInvocations,
				CostMicros:   r.Limits.MaxCostMicros,
				WarnPercent:  r.Limits.WarnAtPercent,
				BlockPercent: r.Limits.BlockAtPercent,
			},
			Thresholds: map[string]Threshold{
				"tokens": NewThreshold(r.Limits.MaxContextTokens, r.Limits.WarnAtPercent, r.Limits.BlockAtPercent),
				"shell":  NewThreshold(r.Limits.MaxShellInvocations, r.Limits.WarnAtPercent, r.Limits.BlockAtPercent),
				"cost":   NewThreshold(r.Limits.MaxCostMicros, r.Limits.WarnAtPercent, r.Limits.BlockAtPercent),
			},
			IO: io,
		}
	}
	for name, ceiling := range doc.Roles {
		ceiling.Covers = covers(doc, ceiling)
		doc.Roles[name] = ceiling
	}
	lub := DefaultCeiling(doc)
	doc.Ceiling = CeilingDoc{Limits: lub.Limits, Covers: covers(doc, lub)}
	return doc
}

// covers are the roles of doc within ceiling.
func covers(doc *Document, ceiling RoleDoc) map[string]bool {
	out := map[string]bool{}
	for name, r := range doc.Roles {
		if Within(r, ceiling) {
			out[name] = true
		}
	}
	return out
}

// DefaultCeiling is the ceiling of an agent without a max_role: the least
// upper bound of the non-privileged roles of the built-in names (as the
// user's files may have adjusted them; a project may not redefine them):
// every tool, shell policy track, and the highest of their limits and
// block percentages. So the seeds' switches (coder, debugger, reviewer,
// and narrower roles of one's own) stay open, and no role file of a
// repository can define a way above them.
func DefaultCeiling(doc *Document) RoleDoc {
	c := RoleDoc{ShellPolicy: "track", Allowed: NewMatcher([]string{"*"}), Denied: NewMatcher(nil), Ask: NewMatcher(nil)}
	first := true
	for _, name := range roles.BuiltinNames {
		r, ok := doc.Roles[name]
		if !ok || r.Privileged {
			continue
		}
		if first {
			// Without a role to bound, the ceiling's limits stay 0 and
			// its block percentage 0, below any a role may have: it
			// covers nothing.
			c.Limits, first = r.Limits, false
			continue
		}
		c.Limits.Tokens = upperBound(c.Limits.Tokens, r.Limits.Tokens)
		c.Limits.Shell = max(c.Limits.Shell, r.Limits.Shell)
		c.Limits.CostMicros = upperBound(c.Limits.CostMicros, r.Limits.CostMicros)
		c.Limits.WarnPercent = max(c.Limits.WarnPercent, r.Limits.WarnPercent)
		c.Limits.BlockPercent = max(c.Limits.BlockPercent, r.Limits.BlockPercent)
	}
	return c
}

// upperBound is the least upper bound of two limits of context tokens or
// of cost, where a limit of 0 is no bound at all: such a dimension is never
// exhausted (contract rule 5). A limit of shell calls is another matter: 0
// admits none.
func upperBound(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// boundWithin reports whether a limit of context tokens or of cost is no
// looser than a ceiling's: a limit of 0 bounds nothing (see upperBound),
// so it is within only a ceiling's 0.
func boundWithin(limit, ceiling int64) bool {
	return ceiling == 0 || limit > 0 && limit <= ceiling
}

// agentBudgetDoc is the data of an agent budget: the thresholds of the
// dimensions it bounds, as for a role's.
func agentBudgetDoc(b AgentBudget) AgentBudgetDoc {
	d := AgentBudgetDoc{Period: b.Period, Limits: map[string]int64{}, Thresholds: map[string]Threshold{},
		WarnPercent: b.WarnPercent, BlockPercent: b.BlockPercent}
	for _, dim := range []struct {
		name, limit string
		v           *int64
	}{{"tokens", "tokens", b.Tokens}, {"shell", "shell", b.Shell}, {"cost", "cost_micros", b.CostMicros}} {
		if dim.v != nil {
			d.Limits[dim.limit] = *dim.v
			d.Thresholds[dim.name] = NewThreshold(*dim.v, b.WarnPercent, b.BlockPercent)
		}
	}
	return d
}

// protectDoc is the data of the self-protection rules.
func protectDoc(p Protect) ProtectDoc {
	paths := []string{}
	for _, path := range p.Paths {
		if path != "" && !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	d := ProtectDoc{Enabled: !p.Off, Paths: paths, Locations: slices.Clone(ProtectedLocations),
		Commands: OperatorCommands(), Home: p.Home, Above: above(paths, p.Home, p.Project)}
	d.Suspect = Suspect{Regex: suspect(d), Of: SuspectOf{Paths: d.Paths, Locations: d.Locations, Commands: d.Commands, Home: d.Home, Above: d.Above}}
	return d
}

// above are the directories above the absolute paths, each with the path
// below it, up to the home directory (from which a word must hold two
// segments), the project or the root, whichever comes first.
func above(paths []string, home, project string) []Above {
	home, project = strings.TrimRight(home, "/"), strings.TrimRight(project, "/")
	out := []Above{}
	for _, path := range paths {
		path = strings.TrimRight(path, "/")
		if !strings.HasPrefix(path, "/") {
			continue
		}
		for dir := path[:strings.LastIndex(path, "/")]; dir != ""; dir = dir[:strings.LastIndex(dir, "/")] {
			if project != "" && (dir == project || strings.HasPrefix(project, dir+"/")) ||
				home != "" && strings.HasPrefix(home, dir+"/") {
				break
			}
			a := Above{Dir: dir, Rest: path[len(dir)+1:], Least: 1}
			if dir == home {
				a.Least = 2
			}
			if strings.Count(a.Rest, "/")+1 >= a.Least && !slices.Contains(out, a) {
				out = append(out, a)
			}
			if dir == home {
				break
			}
		}
	}
	return out
}

// suspect is the regular expression of ProtectDoc.Suspect: the locations
// and commands as they are, and for each path the part of it that any
// form of it holds. A path under the home directory may be written from it
// (~/x, $HOME/x, ${HOME}/x), so its part after the home is enough; a path
// the home directory is under (the home itself, or above it) may be written
// as ~, $HOME or ${HOME} and anything after. The rules also read a path or
// command with its empty and . segments dropped, and an absolute path (or
// one from the home, or a file:// URI) with its .. segments worked out, so a
// string that holds // or /./, and such a path that holds a .. segment, is
// suspect too (SuspectSegments).
func suspect(d ProtectDoc) string {
	alternatives := append(slices.Clone(d.Locations), d.Commands...)
	alternatives = append(alternatives, SuspectSegments...)
	literals := map[string]bool{}
	home := strings.TrimRight(d.Home, "/")
	for _, path := range d.Paths {
		dir := strings.TrimRight(path, "/")
		switch {
		case home != "" && strings.HasPrefix(dir, home+"/"):
			literals[dir[len(home):]] = true
		case home != "" && (dir == "" || dir == home || strings.HasPrefix(home, dir+"/")):
			literals["~"], literals["$HOME"], literals["${HOME}"] = true, true, true
			literals[path] = true
		default:
			literals[path] = true
		}
	}
	for _, a := range d.Above {
		switch {
		case home != "" && a.Dir == home:
			// The word holds the first two segments of the rest.
			literals[strings.Join(strings.SplitN(a.Rest, "/", 3)[:2], "/")] = true
		case home != "" && strings.HasPrefix(a.Dir, home+"/"):
			literals[a.Dir[len(home):]] = true
		default:
			literals[a.Dir] = true
		}
	}
	for _, l := range slices.Sorted(maps.Keys(literals)) {
		alternatives = append(alternatives, regexp.QuoteMeta(l))
	}
	return "(?:" + strings.Join(alternatives, ")|(?:") + ")"
}

func lower(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToLower(s)
	}
	return out
}

// shellRank orders shell policies from the strictest.
var shellRank = map[string]int{"deny": 0, "compress": 1, "track": 2}

// Within reports whether role r is no more privileged than ceiling: it can
// call no tool the ceiling cannot (it allows only what the ceiling's allowed
// patterns cover, and denies at least what the ceiling denies), it calls
// without a person's approval no tool the ceiling asks for, its shell
// policy is no looser (deny, compress, track), no limit and no block
// percentage is higher (a limit of 0 context tokens or $0 is none at all:
// see boundWithin), and it is privileged only if the ceiling is. It is
// conservative: a role it cannot prove within is not.
func Within(r, ceiling RoleDoc) bool {
	switch {
	case r.Privileged && !ceiling.Privileged,
		shellRank[r.ShellPolicy] > shellRank[ceiling.ShellPolicy],
		!boundWithin(r.Limits.Tokens, ceiling.Limits.Tokens),
		r.Limits.Shell > ceiling.Limits.Shell,
		!boundWithin(r.Limits.CostMicros, ceiling.Limits.CostMicros),
		r.Limits.BlockPercent > ceiling.Limits.BlockPercent:
		return false
	}
	return toolsWithin(r.Allowed.Patterns, r.Denied.Patterns, ceiling.Allowed.Patterns, ceiling.Denied.Patterns) &&
		asksWithin(r.Allowed.Patterns, r.Denied.Patterns, r.Ask.Patterns, ceiling.Ask.Patterns)
}

// asksWithin reports whether a role allowing allowed, denying denied and
// asking for ask calls without asking no tool that a ceiling asking for
// ceilAsk asks for: each of the ceiling's ask patterns the role asks for
// or denies, or no pattern the role allows (and neither denies nor asks
// for) meets it.
func asksWithin(allowed, denied, ask, ceilAsk []string) bool {
	for _, q := range ceilAsk {
		if coveredBy(q, ask) || coveredBy(q, denied) {
			continue
		}
		for _, a := range allowed {
			if !disjoint(a, q) && !coveredBy(a, denied) && !coveredBy(a, ask) {
				return false
			}
		}
	}
	return true
}

// toolsWithin reports whether every tool a role allowing allowed and
// denying denied may call, a role allowing ceilAllowed and denying
// ceilDenied may call too: each allowed pattern is covered by the ceiling's,
// and what the ceiling denies, the role denies or never allows.
func toolsWithin(allowed, denied, ceilAllowed, ceilDenied []string) bool {
	for _, a := range allowed {
		if !coveredBy(a, ceilAllowed) {
			return false
		}
	}
	for _, d := range ceilDenied {
		if coveredBy(d, denied) {
			continue
		}
		for _, a := range allowed {
			if !disjoint(a, d) && !coveredBy(a, denied) {
				return false
			}
		}
	}
	return true
}

// disjoint reports whether no tool name matches both patterns, judged by
// their literal heads and tails (before the first '*', after the last):
// false when it cannot tell.
func disjoint(p, q string) bool {
	switch {
	case !strings.Contains(p, "*"):
		return !NewMatcher([]string{q}).Match(p)
	case !strings.Contains(q, "*"):
		return !NewMatcher([]string{p}).Match(q)
	}
	hp, tp := p[:strings.Index(p, "*")], p[strings.LastIndex(p, "*")+1:]
	hq, tq := q[:strings.Index(q, "*")], q[strings.LastIndex(q, "*")+1:]
	return !strings.HasPrefix(hp, hq) && !strings.HasPrefix(hq, hp) ||
		!strings.HasSuffix(tp, tq) && !strings.HasSuffix(tq, tp)
}

// coveredBy reports whether every tool name pattern p matches is matched by
// one of patterns. A pattern q covers p when q matches p with each '*' of p
// taken as a symbol that only a '*' of q can match: a symbol no byte is (a
// byte such as NUL standing for it would let a pattern with that byte
// cover a '*', and a role escape its ceiling's lists).
func coveredBy(p string, patterns []string) bool {
	marked := make([]int, len(p))
	for i := range len(p) {
		marked[i] = int(p[i])
		if p[i] == '*' {
			marked[i] = star
		}
	}
	for _, q := range patterns {
		if q == p || strings.Contains(q, "*") && starMatchMarked(q, marked) {
			return true
		}
	}
	return false
}

// star is the symbol of a '*' of a pattern matched as a name (coveredBy).
const star = -1

// starMatchMarked is starMatch of a marked name: bytes, and stars that
// only a '*' of pattern matches.
func starMatchMarked(pattern string, s []int) bool {
	parts := strings.Split(pattern, "*")
	if !hasPrefixMarked(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := indexMarked(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && hasPrefixMarked(s[len(s)-len(last):], last)
}

func hasPrefixMarked(s []int, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		if s[i] != int(prefix[i]) {
			return false
		}
	}
	return true
}

func indexMarked(s []int, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if hasPrefixMarked(s[i:], sub) {
			return i
		}
	}
	return -1
}

// NewMatcher compiles a pattern list. '*' matches any run of characters;
// every other character is literal.
func NewMatcher(patterns []string) Matcher {
	m := Matcher{Exact: map[string]bool{}}
	m.Patterns = slices.Compact(slices.Sorted(slices.Values(patterns)))
	if m.Patterns == nil {
		m.Patterns = []string{}
	}
	alternatives := make([]string, 0, len(m.Patterns))
	for _, p := range m.Patterns {
		switch {
		case !strings.Contains(p, "*"):
			m.Exact[p] = true
		case strings.Trim(p, "*") == "":
			m.All = true
		}
		parts := strings.Split(p, "*")
		for i, part := range parts {
			// Role files are UTF-8 (the TOML decoder refuses any other
			// byte); RE2 reads a stray byte as U+FFFD, and so it is.
			parts[i] = regexp.QuoteMeta(strings.ToValidUTF8(part, "\uFFFD"))
		}
		alternatives = append(alternatives, strings.Join(parts, ".*"))
	}
	m.Regex = matchesNothing
	if len(alternatives) > 0 {
		m.Regex = "^(?s:" + strings.Join(alternatives, "|") + ")$"
	}
	return m
}

// matchesNothing is the Regex of an empty list: a character outside
// Unicode, which no string has (Go reads a byte that is not UTF-8 as
// U+FFFD).
const matchesNothing = `^[^\x00-\x{10FFFF}]$`

// Match reports whether tool matches m, the same way the Rego policy does.
// The policy is the authority on what a role may call; this serves the
// compiler's own reasoning about patterns (which roles are within which,
// see Within), and a test holds it equal to the policy's matching.
func (m Matcher) Match(tool string) bool {
	return slices.ContainsFunc(m.Patterns, func(p string) bool {
		return p == tool || strings.Contains(p, "*") && starMatch(p, tool)
	})
}

// starMatch matches s against a pattern whose only special character is '*'.
func starMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}

func toSet(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// JSON returns the document as indented JSON: the same roles and
// configuration always give the same bytes.
func (d *Document) JSON() ([]byte, error) { return marshal(d) }

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
