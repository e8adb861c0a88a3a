package roles

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentharness/harness/internal/confine"
	"github.com/agentharness/harness/internal/strict"
)

// Set is the resolved roles of one load, by name.
type Set struct {
	roles map[string]*Role
}

// Get returns the named role.
func (s *Set) Get(name string) (*Role, bool) {
	r, ok := s.roles[name]
	return r, ok
}

// Names returns the role names, sorted.
func (s *Set) Names() []string { return strict.SortedKeys(s.roles) }

// All returns the roles, sorted by name.
func (s *Set) All() []*Role {
	out := make([]*Role, 0, len(s.roles))
	for _, n := range s.Names() {
		out = append(out, s.roles[n])
	}
	return out
}

// Len is the number of roles.
func (s *Set) Len() int { return len(s.roles) }

// Load reads the built-in roles and the role files of dirs and resolves
// inheritance. Layers only add: a user file may redefine a built-in or a
// role of a lower user directory (one inheriting its own name adjusts the
// definition it replaces), but a project file may not take a name that a
// user file, a built-in or another project layer has. Missing directories
// are fine. On any problem it returns an [ErrorList] holding every problem
// found, sorted.
func Load(dirs Dirs) (*Set, error) {
	builtins, errs := builtinDefs()
	defs := map[string]*Def{}
	for n, d := range builtins {
		defs[n] = d
	}
	// Lowest precedence first, so that later sources replace earlier ones.
	hidden := map[string]bool{}
	for _, dir := range slices.Backward(dirs.User) {
		found, _, e := readDir("", dir, SourceUser)
		errs = append(errs, e...)
		for _, d := range found {
			replace(defs, hidden, d)
		}
	}
	for _, dir := range dirs.Project {
		root := dirs.Root
		if root == "" {
			root = dir
		}
		found, broken, e := readDir(root, dir, SourceProject)
		errs = append(errs, e...)
		for _, d := range found {
			if prev, ok := defs[d.Name]; ok {
				errs = append(errs, redefined(d, prev))
				continue
			}
			// No replace: a project's role never adjusts another, so one
			// inheriting its own name is a cycle.
			defs[d.Name] = d
		}
		for _, d := range broken {
			if prev, ok := defs[d.Name]; ok {
				errs = append(errs, redefined(d, prev))
			}
		}
	}
	set, e := resolve(defs, hidden, builtins[DefaultRole])
	errs = append(errs, e...)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return set, nil
}

// LoadDefs resolves role definitions given directly (tests, embedding
// programs); the built-in roles are added beneath them.
func LoadDefs(extra ...*Def) (*Set, error) {
	builtins, errs := builtinDefs()
	defs := map[string]*Def{}
	for n, d := range builtins {
		defs[n] = d
	}
	hidden := map[string]bool{}
	for _, d := range extra {
		replace(defs, hidden, d)
	}
	set, e := resolve(defs, hidden, builtins[DefaultRole])
	errs = append(errs, e...)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return set, nil
}

// replace puts d in place of the definition of the same name, if any. A
// definition that inherits its own name starts from the one it replaces
// (a user's reviewer with inherits = "reviewer" adjusts the built-in):
// that one stays, hidden, under its name and file ("reviewer
// (builtin:reviewer.toml)"), a parent but not a role.
func replace(defs map[string]*Def, hidden map[string]bool, d *Def) {
	if prev, ok := defs[d.Name]; ok && d.Inherits == d.Name {
		below := fmt.Sprintf("%s (%s)", prev.Name, prev.File)
		defs[below], hidden[below] = prev, true
		d.Inherits = below
	}
	defs[d.Name] = d
}

// redefined is the error of a project file d that takes the name of prev.
func redefined(d, prev *Def) *Error {
	var at strict.Pos
	if d.doc != nil {
		if at = d.doc.Pos.Of("role"); at.Line == 0 {
			at = d.doc.Pos.First()
		}
	}
	return &Error{File: d.File, Line: at.Line, Col: at.Col, Key: "role", Msg: fmt.Sprintf(
		"role %q is already defined by %s (%s): a project may only add roles (rename it, and use inherits = %q to start from it)",
		d.Name, prev.File, prev.Source, d.Name)}
}

// readDir parses every *.toml file of dir, in name order: the definitions
// that parse, and those that do not (with a valid name) beside their
// errors, so that a broken file is still held to the layering rule. With
// root set (a project's directory), no file is read through a symbolic
// link that leads out of the project (see internal/confine).
func readDir(root, dir string, source Source) (defs, broken []*Def, errs ErrorList) {
	files, errs := confine.ReadDir(root, dir, ".toml")
	for _, f := range files {
		d, e := Parse(f.Path, f.Src, source)
		if len(e) > 0 {
			errs = append(errs, e...)
			if ValidName(d.Name) {
				broken = append(broken, d)
			}
			continue
		}
		defs = append(defs, d)
	}
	return defs, broken, errs
}

// fieldDefaults are the values of a role with no parent that leaves a field out.
func fieldDefaults(coder *Def) map[string]any {
	d := map[string]any{
		"role.description":  "",
		"role.shell_policy": ShellTrack,
		"role.privileged":   false,
		"tools.allowed":     []string{"*"},
		"tools.denied":      []string{},
		"tools.ask":         []string{},
	}
	for _, k := range limitKeys {
		if coder != nil {
			d[k] = coder.Values[k]
		}
	}
	return d
}

var limitKeys = []string{
	"limits.max_context_tokens", "limits.max_shell_invocations", "limits.max_cost_usd",
	"limits.warn_at_percent", "limits.block_at_percent",
}

// resolve applies inheritance, key by key, to every definition but the
// hidden ones (definitions replaced by one that inherits them).
func resolve(defs map[string]*Def, hidden map[string]bool, coder *Def) (*Set, ErrorList) {
	var errs ErrorList
	defaults := fieldDefaults(coder)
	set := &Set{roles: map[string]*Role{}}
	missing := map[string][]string{} // def with a bad inherits → longest chain seen
	fromProject := map[string]bool{} // user defs inheriting a project's, reported
	for _, name := range strict.SortedKeys(defs) {
		if hidden[name] {
			continue
		}
		chain := []string{name}
		cur := defs[name]
		broken := false
		for cur.Inherits != "" {
			parent := cur.Inherits
			if i := slices.Index(chain, parent); i >= 0 {
				cycle := append(slices.Clone(chain[i:]), parent)
				// Report a cycle once, at its smallest member.
				if i == 0 && slices.Min(chain) == name {
					errs = append(errs, defs[name].errAt("role.inherits", "role %q: inheritance cycle %s",
						name, strings.Join(cycle, " → ")))
				}
				broken = true
				break
			}
			if _, ok := defs[parent]; !ok {
				seen := append(slices.Clone(chain), parent)
				if len(seen) > len(missing[cur.Name]) {
					missing[cur.Name] = seen
				}
				broken = true
				break
			}
			if cur.Source != SourceProject && defs[parent].Source == SourceProject {
				// A user's role that started from a project's would be the
				// project's to change (its files are the agent's to write),
				// while it passed for the user's: within the ceiling or not,
				// a ceiling itself (max_role).
				if !fromProject[cur.Name] {
					fromProject[cur.Name] = true
					errs = append(errs, cur.errAt("role.inherits", "role %q (%s) inherits %q, which the project defines: "+
						"a role of the user's may not start from a project's, whose files the agent can change (copy what it needs into the user's file)",
						cur.Name, cur.Source, parent))
				}
				broken = true
				break
			}
			chain = append(chain, parent)
			cur = defs[parent]
		}
		if broken {
			continue
		}
		r := build(defs, chain, defaults)
		if err := checkThresholds(defs, chain, r); err != nil {
			errs = append(errs, err)
		}
		set.roles[name] = r
	}
	for _, name := range strict.SortedKeys(missing) {
		chain := missing[name]
		d := defs[name]
		msg := fmt.Sprintf("role %q inherits %q, which does not exist (%s)", name, d.Inherits, strings.Join(chain, " → "))
		if s := strict.Suggest(d.Inherits, slices.DeleteFunc(strict.SortedKeys(defs), func(n string) bool { return hidden[n] })); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		errs = append(errs, d.errAt("role.inherits", "%s", msg))
	}
	return set, errs
}

// checkThresholds refuses a resolved role that would warn above the
// percentage where it blocks (block_at_percent 1 to 100): its warning
// could never show. The error is reported at the role's own file, at the
// key of the two that it sets (warn_at_percent when it sets both); a role
// that sets neither inherits the problem from the parent that has it, and
// is left to that parent's error.
func checkThresholds(defs map[string]*Def, chain []string, r *Role) *Error {
	const warnKey, blockKey = "limits.warn_at_percent", "limits.block_at_percent"
	l := r.Limits
	if l.BlockAtPercent > 100 || l.WarnAtPercent <= l.BlockAtPercent {
		return nil
	}
	self := defs[chain[0]]
	_, setsWarn := self.Values[warnKey]
	_, setsBlock := self.Values[blockKey]
	if !setsWarn && !setsBlock {
		return nil
	}
	// from says where an inherited value comes from.
	from := func(key string) string {
		if _, ok := self.Values[key]; ok {
			return ""
		}
		for _, n := range chain[1:] {
			if _, ok := defs[n].Values[key]; ok {
				return fmt.Sprintf(" (inherited from %s)", defs[n].Name)
			}
		}
		return " (the coder's, by default)"
	}
	at := warnKey
	if !setsWarn {
		at = blockKey
	}
	return self.errAt(at, "%s %d%s is above %s %d%s: the role would block before it warns, so its warning could never show",
		warnKey, l.WarnAtPercent, from(warnKey), blockKey, l.BlockAtPercent, from(blockKey))
}

// build makes the resolved role named chain[0]: each field comes from the
// first definition along the chain that sets it, else from the defaults.
func build(defs map[string]*Def, chain []string, defaults map[string]any) *Role {
	self := defs[chain[0]]
	values := map[string]any{}
	origin := map[string]string{}
	for _, n := range chain {
		d := defs[n]
		for k, v := range d.Values {
			if _, set := values[k]; !set {
				values[k], origin[k] = v, d.File
			}
		}
	}
	for k, v := range defaults {
		if _, set := values[k]; !set {
			values[k], origin[k] = v, "default"
			if strings.HasPrefix(k, "limits.") {
				origin[k] = "default (the coder's limit)"
			}
		}
	}
	r := &Role{
		Name:        self.Name,
		Source:      self.Source,
		File:        self.File,
		Inherits:    self.Inherits,
		Chain:       chain,
		Description: values["role.description"].(string),
		ShellPolicy: values["role.shell_policy"].(ShellPolicy),
		Privileged:  values["role.privileged"].(bool),
		Allowed:     values["tools.allowed"].([]string),
		Denied:      values["tools.denied"].([]string),
		Ask:         values["tools.ask"].([]string),
		Limits: Limits{
			MaxContextTokens:    values["limits.max_context_tokens"].(int64),
			MaxShellInvocations: values["limits.max_shell_invocations"].(int64),
			MaxCostMicros:       values["limits.max_cost_usd"].(int64),
			WarnAtPercent:       values["limits.warn_at_percent"].(int64),
			BlockAtPercent:      values["limits.block_at_percent"].(int64),
		},
		Origin: origin,
	}
	for k, v := range values {
		if io, ok := strings.CutPrefix(k, "io."); ok {
			if r.IO == nil {
				r.IO = map[string]any{}
			}
			r.IO[io] = v
		}
	}
	return r
}
