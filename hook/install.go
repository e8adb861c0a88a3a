package hook

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentharness/harness/hookclient"
)

// Command is the hook's command line in Claude Code's settings, for the
// harness binary exe.
func Command(exe string) string { return shellQuote(exe) + " hook claude-code" }

// SmallName is the small hook binary's name (cmd/harness-hook): it hands
// the call to the hook daemon without loading the harness, so it starts
// in a fraction of the harness's time, and runs the harness beside it
// (else on the PATH) when no daemon answers.
const SmallName = "harness-hook"

// SmallCommand is the hook's command line for the small hook binary at
// path.
func SmallCommand(path string) string { return shellQuote(path) + " claude-code" }

// PortableCommand is the hook's command line that works on every machine
// where the harness is on the PATH as "harness".
const PortableCommand = "harness hook claude-code"

// PortableSmallCommand is the hook's command line that works on every
// machine where the harness is on the PATH as "harness", and runs the
// small hook binary where it is on the PATH too: a machine without it runs
// the harness, never nothing (Claude Code lets a tool run when its hook
// cannot start).
const PortableSmallCommand = "command -v " + SmallName + " >/dev/null && exec " + SmallName + " claude-code || exec " + PortableCommand

// Beside is the small hook binary installed beside the harness binary exe
// (SmallName in its directory, a regular executable file), "" for none.
func Beside(exe string) string {
	if !filepath.IsAbs(exe) {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), SmallName)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p
	}
	return ""
}

// command is the hook's command line for this machine: the small hook
// binary's when there is one beside the harness, else the harness's,
// after the assignments of its pinned environment.
func (p Protected) command() string {
	if p.Hook != "" {
		return p.Pinned() + SmallCommand(p.Hook)
	}
	return p.Pinned() + Command(p.Exe)
}

// PinnedVars are the environment variables an installed hook's command
// line sets (Pinned): those that locate the user's harness files and
// choose a new session's role (hookclient.EnvVars), and those that change
// how the hook answers (its deadline, whether it asks the daemon), which a
// project could set to make a call outlast its deadline and go uncharged.
var PinnedVars = append(slices.Clone(hookclient.EnvVars), "HARNESS_HOOK_DEADLINE", "HARNESS_HOOK_DAEMON")

// Pinned is the shell's assignments of p.Env, in the order of PinnedVars,
// each followed by a space (HOME=/home/u, an unset variable set to the
// empty string): the start of a hook's command line that runs with the
// installation's environment whatever a project's settings set. "" when
// p.Env is nil.
func (p Protected) Pinned() string {
	if p.Env == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range PinnedVars {
		b.WriteString(k + "=" + shellQuote(p.Env[k]) + " ")
	}
	return b.String()
}

// withoutPinned is a command line without the assignments of PinnedVars it
// starts with, each written as Pinned writes it (its value as shellQuote
// quotes it): a command with any other assignment, or a value that would
// be expanded ($HOME, a command's output), is not an installed hook's.
func withoutPinned(command string) string {
	for {
		name, rest, ok := strings.Cut(command, "=")
		if !ok || !slices.Contains(PinnedVars, name) {
			return command
		}
		value, after, ok := cutShellWord(rest)
		if !ok || shellQuote(value) != rest[:len(rest)-len(after)-1] {
			return command
		}
		command = after
	}
}

// cutShellWord reads a word as shellQuote writes it, up to a space: its
// value (quotes taken away), and what follows the space.
func cutShellWord(s string) (value, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ':
			return b.String(), s[i+1:], true
		case '\\':
			if i+1 >= len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		case '\'':
			q := strings.IndexByte(s[i+1:], '\'')
			if q < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+q])
			i += q + 1
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// portable is the hook's command line for every machine: the small hook
// binary's where there is one, when this harness has one beside it.
func (p Protected) portable() string {
	if p.Hook != "" {
		return PortableSmallCommand
	}
	return PortableCommand
}

// IsHarnessCommand reports whether a hook's command line is one that
// installation writes: the harness's (PROGRAM hook claude-code, or
// PortableSmallCommand) or the small hook binary's (…/harness-hook
// claude-code), the program one word, after the assignments of Pinned.
// Another command line that runs the harness among other things (exit 0;
// harness hook claude-code) is not the harness's hook: installation adds
// its own beside it.
func IsHarnessCommand(command string) bool {
	command = withoutPinned(command)
	if command == PortableSmallCommand {
		return true
	}
	if prog, ok := strings.CutSuffix(command, " hook claude-code"); ok {
		_, ok := oneWord(prog)
		return ok
	}
	prog, ok := strings.CutSuffix(command, " claude-code")
	if !ok {
		return false
	}
	path, ok := oneWord(prog)
	return ok && (path == SmallName || strings.HasSuffix(path, "/"+SmallName))
}

// oneWord is the value of s when s is one word as shellQuote writes it (a
// program's path): not a command line of several (exit 0; harness ...).
func oneWord(s string) (string, bool) {
	value, rest, ok := cutShellWord(s + " ")
	return value, ok && rest == "" && shellQuote(value) == s
}

// Events are the hook events the harness is installed for: before a tool
// runs, after it, and after it failed (its error reaches the model, and
// is charged).
var Events = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}

// Install merges the harness hook (command; "" for none) and the
// permission rules deny (DenyRules) into the Claude Code settings file at
// path, keeping every other setting, hook and rule; a harness hook already
// there gets the new command and timeout, and a rule already there is not
// added again. The file's text is edited in place, so it keeps its key
// order, indentation and final newline; it is replaced atomically, and
// left as it is when it cannot be read as settings. It reports whether
// anything changed.
func Install(path, command string, deny []string) (bool, error) {
	return install(path, command, deny, true)
}

// install is Install; without add, a harness hook is only updated where
// there is one, never added.
func install(path, command string, deny []string, add bool) (bool, error) {
	src, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		src = []byte("{}\n")
	case err != nil:
		return false, err
	}
	d, err := parseJSONDoc(src)
	if err != nil {
		return false, fmt.Errorf("%s is not valid JSON (%v); it is left as it is", path, err)
	}
	if d.root.kind != '{' {
		return false, fmt.Errorf("%s is not a JSON object; it is left as it is", path)
	}
	if command != "" {
		if err := mergeHooks(d, command, add); err != nil {
			return false, fmt.Errorf("%s: %v; it is left as it is", path, err)
		}
	}
	if err := mergeDeny(d, deny); err != nil {
		return false, fmt.Errorf("%s: %v; it is left as it is", path, err)
	}
	if string(d.src) == string(src) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp := path + ".harness-tmp"
	if err := os.WriteFile(tmp, d.src, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// Target is one settings file an installation writes, and what goes
// into it.
type Target struct {
	Path string
	// Command is the hook's command line: added, or given to a harness
	// hook already there; "" for no hook.
	Command string
	// UpdateOnly gives Command to a harness hook already there and adds
	// none.
	UpdateOnly bool
	// Rules are the permission rules (permissions.deny) it gets.
	Rules []string
	// Note says why, for the person installing ("" for nothing to say).
	Note string
}

// UserTargets is the installation for every project of the user: the
// user's ~/.claude/settings.json, a file of this machine, gets the command
// of the small hook binary p.Hook, else of the harness binary p.Exe, and
// every rule of DenyRules(p).
func UserTargets(p Protected) []Target {
	return []Target{{Path: filepath.Join(p.Home, ".claude", "settings.json"), Command: p.command(), Rules: DenyRules(p)}}
}

// ProjectTargets is the installation in the project at root, whose
// .claude/settings.json is shared by everyone who works on it (it is
// committed) and whose .claude/settings.local.json is this machine's
// (Claude Code keeps it out of git). The shared file gets what works on
// every machine: the hook as PortableCommand when "harness" on the PATH
// is the binary p.Exe (onPath) — PortableSmallCommand when the small hook
// binary is beside it (p.Hook) — and the rules of DenyRules(p) that name
// no path of this machine (LocalRule). The local file gets the rest: the
// rules naming this machine's paths, and, when "harness" on the PATH is
// another binary or none, the hook with the absolute command of p.Hook,
// else of p.Exe, unless the shared file already runs a harness hook (both
// would run, and every call would be charged twice). With onPath, a
// harness hook in the local file gets the shared file's command too:
// Claude Code runs identical hook commands once.
func ProjectTargets(root string, p Protected, onPath bool) []Target {
	exe := p.Exe
	dir := filepath.Join(root, ".claude")
	shared := Target{Path: filepath.Join(dir, "settings.json")}
	local := Target{Path: filepath.Join(dir, "settings.local.json")}
	for _, r := range DenyRules(p) {
		if p.LocalRule(r) {
			local.Rules = append(local.Rules, r)
		} else {
			shared.Rules = append(shared.Rules, r)
		}
	}
	switch portable := p.portable(); {
	case onPath:
		shared.Command = portable
		shared.Note = "the hook runs `" + portable + "`: harness on the PATH is this binary"
		local.Command, local.UpdateOnly = portable, true
	case HasHarnessHook(shared.Path):
		local.Note = fmt.Sprintf("no hook added: %s already runs a harness hook, and a second one would charge every call twice; "+
			"harness on the PATH is not this binary (%s): put it there as harness and install again", shared.Path, exe)
	default:
		local.Command = p.command()
		local.Note = fmt.Sprintf("the hook runs this binary by its path (%s), which is this machine's: harness on the PATH is not it, "+
			"so the hook went into this file, which is not committed, and %s got the rules every machine shares", cmp.Or(p.Hook, exe), shared.Path)
	}
	out := []Target{shared}
	if local.Command != "" && !local.UpdateOnly || len(local.Rules) > 0 || local.Note != "" || fileExists(local.Path) {
		out = append(out, local)
	}
	return out
}

// LocalRule reports whether a permission rule of DenyRules(p) names a
// path of this machine: the binary, or an absolute path outside the home
// directory (//…) other than the patterns that hold anywhere (//**/…).
func (p Protected) LocalRule(rule string) bool {
	if filepath.IsAbs(p.Exe) && (rule == "Edit("+pathRule(p.Home, p.Exe)+")" || strings.HasPrefix(rule, "Bash("+p.Exe+" ")) {
		return true
	}
	if filepath.IsAbs(p.Hook) && rule == "Edit("+pathRule(p.Home, p.Hook)+")" {
		return true
	}
	for _, prefix := range []string{"Edit(//", "Read(//"} {
		if rest, ok := strings.CutPrefix(rule, prefix); ok && !strings.HasPrefix(rest, "**/") {
			return true
		}
	}
	return false
}

// OnPath reports whether "harness" on the PATH (as lookPath finds it) is
// the binary exe.
func OnPath(exe string, lookPath func(string) (string, error)) bool {
	found, err := lookPath("harness")
	if err != nil {
		return false
	}
	a, errA := os.Stat(found)
	b, errB := os.Stat(exe)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// Apply writes t (see Install); it reports whether the file changed.
func (t Target) Apply() (bool, error) { return install(t.Path, t.Command, t.Rules, !t.UpdateOnly) }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// HasHarnessHook reports whether the settings file at path runs a harness
// hook (of any binary) for one of the hook's events.
func HasHarnessHook(path string) bool {
	src, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	d, err := parseJSONDoc(src)
	if err != nil {
		return false
	}
	for _, event := range Events {
		if len(harnessEntries(d, event)) > 0 {
			return true
		}
	}
	return false
}

// Timeout is the timeout of the installed hook in Claude Code's settings.
// Claude Code lets the tool run when its hook takes longer, so the hook
// process answers well within it (hookclient.Deadline).
const Timeout = hookclient.Timeout

// hookGroup and hookCommand are an entry of Claude Code's hooks settings,
// their fields in the order Claude Code's documentation writes them.
type hookGroup struct {
	Matcher string        `json:"matcher"`
	Hooks   []hookCommand `json:"hooks"`
}

type hookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

// member is one key of an ordered JSON object.
type member struct {
	Key   string
	Value any
}

// object is a JSON object that keeps its keys in order.
type object []member

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshalNoEscape(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// marshalNoEscape is v as JSON, HTML characters as they are.
func marshalNoEscape(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// group is the hooks of one event that run command on every tool.
func group(command string) []hookGroup {
	return []hookGroup{{Matcher: "*", Hooks: []hookCommand{{Type: "command", Command: command, Timeout: int(Timeout / time.Second)}}}}
}

// Settings is what Install merges into Claude Code's settings: the hooks
// that run command ("" for none) on every tool, before and after it and
// after it failed, and the permission rules deny.
func Settings(command string, deny []string) any {
	var s object
	if command != "" {
		var hooks object
		for _, event := range Events {
			hooks = append(hooks, member{event, group(command)})
		}
		s = append(s, member{"hooks", hooks})
	}
	if len(deny) > 0 {
		s = append(s, member{"permissions", object{{"deny", deny}}})
	}
	if s == nil {
		return object{}
	}
	return s
}

// harnessEntries are the harness's hook entries of event in d: the
// objects of hooks.<event>[*].hooks whose command runs the harness hook.
func harnessEntries(d *jsonDoc, event string) []*jsonNode {
	var out []*jsonNode
	groups := d.get("hooks", event)
	if groups == nil || groups.kind != '[' {
		return nil
	}
	for _, g := range groups.kids {
		list := g.member("hooks")
		if list == nil || list.kind != '[' {
			continue
		}
		for _, e := range list.kids {
			if cmd := e.member("command"); cmd != nil && cmd.kind == '"' && IsHarnessCommand(cmd.str) {
				out = append(out, e)
			}
		}
	}
	return out
}

// mergeHooks adds the harness hook to d for each of Events (with add),
// keeping every other setting and hook; a harness hook already there gets
// command and the hook's timeout (Timeout: the hook process answers
// within it).
func mergeHooks(d *jsonDoc, command string, add bool) error {
	hooks := d.get("hooks")
	if hooks != nil && hooks.kind != '{' {
		return errors.New(`"hooks" is not an object`)
	}
	if hooks == nil && !add {
		return nil
	}
	if hooks == nil {
		return d.insert(d.root, "hooks", Settings(command, nil).(object)[0].Value)
	}
	timeout := int(Timeout / time.Second)
	for _, event := range Events {
		groups := d.get("hooks", event)
		if groups != nil && groups.kind != '[' {
			return fmt.Errorf("hooks.%s is not an array", event)
		}
		entries := harnessEntries(d, event)
		for i := range entries {
			// Each edit parses the text again: find the entry anew.
			e := harnessEntries(d, event)[i]
			if cmd := e.member("command"); cmd.str != command {
				if err := d.replace(cmd, command); err != nil {
					return err
				}
				e = harnessEntries(d, event)[i]
			}
			switch t := e.member("timeout"); {
			case t == nil:
				if err := d.insert(e, "timeout", timeout); err != nil {
					return err
				}
			case string(d.src[t.start:t.end]) != fmt.Sprint(timeout):
				if err := d.replace(t, timeout); err != nil {
					return err
				}
			}
		}
		if len(entries) > 0 || !add {
			continue
		}
		var err error
		if groups == nil {
			err = d.insert(d.get("hooks"), event, group(command))
		} else {
			err = d.appendTo(d.get("hooks", event), group(command)[0])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergeDeny adds rules to d's permissions.deny, keeping every other
// permission and rule and never adding one twice.
func mergeDeny(d *jsonDoc, rules []string) error {
	perms := d.get("permissions")
	if perms != nil && perms.kind != '{' {
		return errors.New(`"permissions" is not an object`)
	}
	deny := perms.member("deny")
	if deny != nil && deny.kind != '[' {
		return errors.New("permissions.deny is not an array")
	}
	var have []string
	if deny != nil {
		for _, r := range deny.kids {
			if r.kind == '"' {
				have = append(have, r.str)
			}
		}
	}
	var missing []string
	for _, r := range rules {
		if !slices.Contains(have, r) && !slices.Contains(missing, r) {
			missing = append(missing, r)
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case perms == nil:
		return d.insert(d.root, "permissions", object{{"deny", missing}})
	case deny == nil:
		return d.insert(perms, "deny", missing)
	}
	for _, r := range missing {
		if err := d.appendTo(d.get("permissions", "deny"), r); err != nil {
			return err
		}
	}
	return nil
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LookPath finds the executable name in the directories of pathList (a
// $PATH), as a shell would.
func LookPath(name, pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on the PATH", name)
}
