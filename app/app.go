// Package app is the composition root of the harness: it finds the
// project and its layers (every .lean-ctx from the working directory up to
// the root, each adding to the others), reads the configuration, the roles
// and the custom policies, cross-checks them (everything `harness check`
// checks, every time), compiles them and prepares the policy engine; then,
// for the commands that need them, it opens the ledger and the logs and
// wires the governor, the gateway and the hook. Every command, the gateway,
// the hook and its daemon start here, so that they all load the same world
// the same way; cmd/harness only maps flags to Params and prints.
//
// It holds no rule of its own: the policy decides, the governor
// orchestrates, and the stages (roles, config, compiler, policy, budget,
// events) know nothing of each other beyond what this package hands them.
package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/metrics"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// Version is the harness's version: what `harness version` prints, what the
// gateway tells MCP peers, and what decision-log labels carry.
const Version = "0.1.0"

// Env is what the harness reads of its surroundings. The command gives the
// process's; tests and the hook daemon give their own.
type Env struct {
	WorkDir string
	Home    string
	Getenv  func(string) string
}

// EnvVars are the environment variables that change what a load means:
// where the user's files and state are, and the operator's starting role.
var EnvVars = []string{"HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "LEAN_CTX_ROLE"}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Params are what a load needs.
type Params struct {
	Env
	// Project is the project root (--project); "" to find it by walking up
	// from the working directory.
	Project string
	// StartRole is a role the caller will start new sessions in (serve
	// --role), checked to exist like the configuration's.
	StartRole string
	// Metrics, if set, hears this load's decisions, charges, ledger
	// operations and events (Open wires them), and learns the names of
	// its roles, tools and agents as label values.
	Metrics *metrics.Metrics
	// Exe is the harness binary this process runs ("" when unknown):
	// where the user may replace it, it and the small hook binary beside
	// it are the harness's files (see Binaries).
	Exe string
}

// Location is where a project's files are: what a load reads.
type Location struct {
	// Root is the project root, "" when there is none.
	Root string
	// Layers are the project's .lean-ctx directories, the root's first,
	// then those of the directories between the root and the working
	// directory (roles.ProjectLayers), whether they exist yet or not: the
	// roles, policies and harness.toml of each apply.
	Layers []string
	// RoleDirs are the role directories, PolicyDirs the custom policies'.
	RoleDirs   roles.Dirs
	PolicyDirs []custom.Dir
	// ConfigFiles are the harness.toml files.
	ConfigFiles config.Files
}

// Locate finds the project root (given, else the outermost directory
// holding .git or .lean-ctx from the working directory up, never the home
// directory), its layers, and the directories and files of roles,
// policies and configuration. With --project DIR, the layers are DIR's
// .lean-ctx and, when the working directory is below DIR, those of the
// directories between, as when DIR is found.
func Locate(p Params) (Location, error) {
	root := p.Project
	if root != "" {
		fi, err := os.Stat(root)
		if err != nil {
			return Location{}, fmt.Errorf("--project: %w", err)
		}
		if !fi.IsDir() {
			return Location{}, fmt.Errorf("--project %s: not a directory", root)
		}
	} else {
		root = roles.FindProjectRoot(p.WorkDir, p.Home)
	}
	xdg := p.getenv("XDG_DATA_HOME")
	l := Location{Root: root, Layers: roles.ProjectLayers(root, p.WorkDir, p.Home)}
	l.RoleDirs = roles.FindDirs(roles.Locate{Project: root, WorkDir: p.WorkDir, Home: p.Home, XDGDataHome: xdg})
	if root == "" {
		l.RoleDirs.Project = nil
	}
	l.PolicyDirs = custom.FindDirs(root, l.Layers, p.Home, xdg)
	l.ConfigFiles = config.FindFiles(p.Home, root, l.Layers)
	return l, nil
}

// Sources are the directories and files a load reads, every layer's
// whether it exists yet or not: what the gateway watches and the hook
// daemon fingerprints, to load again when one changes.
func (l Location) Sources() []string {
	var out []string
	out = append(out, l.RoleDirs.Project...)
	out = append(out, l.RoleDirs.User...)
	for _, d := range l.PolicyDirs {
		out = append(out, d.Path)
	}
	if l.ConfigFiles.User != "" {
		out = append(out, l.ConfigFiles.User)
	}
	return append(out, l.ConfigFiles.Project...)
}

// FoundLayers are the layers whose .lean-ctx directory exists, and the
// root's in any case: what `harness check` shows.
func (l Location) FoundLayers() []string {
	var out []string
	for _, layer := range l.Layers {
		if fi, err := os.Stat(layer); layer == filepath.Join(l.Root, roles.LayerDir) || err == nil && fi.IsDir() {
			out = append(out, layer)
		}
	}
	return out
}

// Harness is one load of the world: the project, its configuration, roles
// and custom policies, cross-checked and compiled, and the engine prepared
// on them. Open adds the ledger, the logs and the governor.
type Harness struct {
	Params Params
	Location
	Config config.Config
	Roles  *roles.Set
	Custom []compiler.Module
	Engine *policy.Engine

	gov     *govern.Governor
	store   budget.Store // the ledger Open opened, unobserved
	closers []func() error
}

// Load reads, checks and compiles everything. Its error is a
// strict.ErrorList naming every problem of every file (file, line, column)
// when the files are at fault, or another error when the harness itself
// cannot run (an unreadable --project).
func Load(ctx context.Context, p Params) (*Harness, error) {
	loc, err := Locate(p)
	if err != nil {
		return nil, err
	}
	return load(ctx, p, loc)
}

func load(ctx context.Context, p Params, loc Location) (*Harness, error) {
	h := &Harness{Params: p, Location: loc}
	cfg, cfgErr := config.Load(loc.ConfigFiles)
	set, rolesErr := roles.Load(loc.RoleDirs)
	mods, modsErr := custom.Load(loc.PolicyDirs)
	var policyErr error // when nothing else loads, the policies' own problems too
	if modsErr == nil && (cfgErr != nil || rolesErr != nil) {
		policyErr = policy.Check(mods)
	}
	var all strict.ErrorList
	for _, err := range []error{cfgErr, rolesErr, modsErr, policyErr} {
		var list strict.ErrorList
		switch {
		case err == nil:
		case errors.As(err, &list):
			all = append(all, list...)
		default:
			return nil, err
		}
	}
	if len(all) > 0 {
		return nil, all.Sort()
	}
	h.Config, h.Roles, h.Custom = cfg, set, mods
	doc := compiler.Compile(set, h.CompilerConfig())
	if errs := h.check(doc); len(errs) > 0 {
		return nil, errs.Sort()
	}
	e, err := policy.New(ctx, doc, mods...)
	if err != nil {
		return nil, asList(err)
	}
	e.SetBounds(policy.Bounds{Timeout: cfg.PolicyTimeout})
	h.Engine = e
	return h, nil
}

// asList makes err a strict.ErrorList, so that every load error prints the
// same way.
func asList(err error) strict.ErrorList {
	var list strict.ErrorList
	if errors.As(err, &list) {
		return list
	}
	return strict.ErrorList{{Msg: err.Error()}}
}

// CompilerConfig is the part of the configuration the compiler needs: the
// tool lists, the agents' budgets, and what self-protection guards.
func (h *Harness) CompilerConfig() compiler.Config {
	c := h.Config
	budgets := map[string]compiler.AgentBudget{}
	for name, b := range c.AgentBudgets {
		budgets[name] = compiler.AgentBudget{Period: b.Period, Tokens: b.Tokens, Shell: b.Shell, CostMicros: b.CostMicros,
			WarnPercent: b.WarnPercent, BlockPercent: b.BlockPercent}
	}
	return compiler.Config{
		ShellTools: c.ShellTools, ExemptTools: c.ExemptTools, EditTools: c.EditTools, AgentBudgets: budgets,
		Protect: compiler.Protect{Off: c.ProtectOff, Paths: h.protectedPaths(), Home: h.Params.Home, Project: h.Project()},
	}
}

// protectedPaths are the harness's own files and directories, which the
// self-protection rules keep from agents: the user's roles, policies and
// configuration, the state directory (the ledger, the logs, the hook
// daemon's socket), a ledger file or logs configured elsewhere, Claude
// Code's settings files that hold the hook (the user's and the project's),
// the project's .lean-ctx, the harness's binaries the user may replace
// (Binaries), and the configuration's [protect] paths. Each is given as
// found and, if it differs, with its symbolic links resolved.
func (h *Harness) protectedPaths() []string {
	home, getenv := h.Params.Home, h.Params.getenv
	var paths []string
	if home != "" {
		paths = append(paths, filepath.Join(home, ".lean-ctx"),
			filepath.Join(home, ".claude", "settings.json"), filepath.Join(home, ".claude", "settings.local.json"))
	}
	xdg := getenv("XDG_DATA_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".local", "share")
	}
	if xdg != "" {
		paths = append(paths, filepath.Join(xdg, "lean-ctx"))
	}
	paths = append(paths, StateDir(h.Params.Env))
	if u := h.LedgerURL(""); strings.HasPrefix(u, "sqlite:") || !strings.Contains(u, ":") {
		paths = append(paths, strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "//"))
	}
	for _, log := range []string{h.EventsPath(), h.DecisionsPath()} {
		if log != "" {
			paths = append(paths, filepath.Dir(log))
		}
	}
	paths = append(paths, h.Layers...)
	if h.Root != "" {
		paths = append(paths, filepath.Join(h.Root, ".claude", "settings.json"), filepath.Join(h.Root, ".claude", "settings.local.json"))
	}
	paths = append(paths, Binaries(h.Params.Exe)...)
	// The hook daemon's requests carry the hook's PATH (an agent may have
	// started the daemon with a PATH of its own); its own PATH is looked
	// at too, which can only add a path, never take the hook's away.
	paths = append(paths, Binaries(onPath(h.Params.Exe, getenv("PATH")))...)
	if own := os.Getenv("PATH"); own != getenv("PATH") {
		paths = append(paths, Binaries(onPath(h.Params.Exe, own))...)
	}
	paths = append(paths, h.Config.ProtectPaths...)
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out = append(out, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	return out
}

// Project is the project's root as policies see it (input.project):
// absolute, "" when there is none.
func (h *Harness) Project() string {
	if h.Root == "" {
		return ""
	}
	if abs, err := filepath.Abs(h.Root); err == nil {
		return abs
	}
	return h.Root
}

// EnvRole is $LEAN_CTX_ROLE: the operator's starting role for new sessions
// of agents without one of their own.
func (h *Harness) EnvRole() string { return h.Params.getenv("LEAN_CTX_ROLE") }

// Rules are the governor's rules of this load.
func (h *Harness) Rules() govern.Rules {
	return govern.Rules{Engine: h.Engine, Roles: h.Roles, DefaultRole: h.Config.DefaultRole,
		AgentRoles: h.Config.AgentRoles, AgentMaxRoles: h.Config.AgentMaxRoles}
}

// Warnings are what a load accepts but an operator should know: a
// starting role in which every call would be refused, since the project
// defines it beyond the agent's ceiling (govern.Rules.Beyond); an HTTP
// token whose agent has no budget across its sessions, so that every new
// MCP session of it (a re-initialize) starts a fresh session budget, and
// nothing bounds the agent as a whole.
func (h *Harness) Warnings() []string {
	var out []string
	rules := h.Rules()
	starts := []config.RoleRef{}
	for _, ref := range h.Config.RoleRefs {
		if !ref.Max {
			starts = append(starts, ref)
		}
	}
	if !slices.ContainsFunc(starts, func(r config.RoleRef) bool { return r.Key == "enforcement.default_role" }) {
		starts = append(starts, config.RoleRef{Role: h.Config.DefaultRole, Place: config.Place{Key: "the default role"}})
	}
	for _, env := range []struct{ name, role string }{{"$LEAN_CTX_ROLE", h.EnvRole()}, {"--role", h.Params.StartRole}} {
		if env.role != "" {
			starts = append(starts, config.RoleRef{Role: env.role, Place: config.Place{Key: env.name}})
		}
	}
	for _, ref := range starts {
		ceiling, beyond := rules.Beyond(ref.Agent, ref.Role)
		if !beyond {
			continue
		}
		who := "agents without a role of their own"
		if ref.Agent != "" {
			who = "agent " + ref.Agent
		}
		where := ref.Key
		if ref.File != "" {
			where = fmt.Sprintf("%s (%s:%d)", ref.Key, ref.File, ref.Line)
		}
		out = append(out, fmt.Sprintf("%s starts %s in role %s, which this project defines beyond %s: "+
			"every call of theirs in it but ctx_session is refused (name a user's role, or raise the agent's max_role)",
			where, who, ref.Role, ceiling))
	}
	for _, t := range h.Config.Tokens {
		if t.Agent == "" { // an operator's, for the live view alone
			continue
		}
		if _, ok := h.Engine.Document().AgentBudget(t.Agent); !ok {
			out = append(out, fmt.Sprintf("gateway token of agent %s: the agent has no budget across its sessions "+
				"([agents.%s.budget] or [agents.\"*\".budget]): each new MCP session of it starts with a full session budget", t.Agent, t.Agent))
		}
	}
	return out
}

// check holds the configuration and the environment to the roles there
// are (every role they name exists, and every agent with a most privileged
// role starts within it) and to the stores there are: the ledger's URL is
// one budget.Open accepts.
func (h *Harness) check(doc *compiler.Document) strict.ErrorList {
	var errs strict.ErrorList
	if u := h.Config.LedgerURL; u != "" {
		if err := budget.CheckURL(u); err != nil {
			errs = append(errs, h.Config.Places["ledger.url"].Errorf("%v", err))
		}
	}
	known := func(role string) bool { _, ok := doc.Roles[role]; return ok }
	unknown := func(role string) string {
		return fmt.Sprintf("unknown role %q; available roles: %s", role, strings.Join(h.Roles.Names(), ", "))
	}
	cfg := h.Config
	for _, ref := range cfg.RoleRefs {
		if !known(ref.Role) {
			errs = append(errs, ref.Errorf("%s", unknown(ref.Role)))
		}
	}
	if !known(cfg.DefaultRole) && !slices.ContainsFunc(cfg.RoleRefs, func(r config.RoleRef) bool { return r.Key == "enforcement.default_role" }) {
		errs = append(errs, &strict.Error{File: "enforcement.default_role", Msg: unknown(cfg.DefaultRole)})
	}
	for _, env := range []struct{ name, role string }{{"$LEAN_CTX_ROLE", h.EnvRole()}, {"--role", h.Params.StartRole}} {
		if env.role != "" && !known(env.role) {
			errs = append(errs, &strict.Error{File: env.name, Msg: unknown(env.role)})
		}
	}
	// An agent with a most privileged role starts within it: in its own
	// starting roles, else in the default role.
	for _, ceiling := range cfg.RoleRefs {
		m, ok := doc.Roles[ceiling.Role]
		if !ceiling.Max || !ok {
			continue
		}
		starts := slices.DeleteFunc(slices.Clone(cfg.RoleRefs), func(r config.RoleRef) bool { return r.Max || r.Agent != ceiling.Agent })
		if len(starts) == 0 {
			starts = slices.DeleteFunc(slices.Clone(cfg.RoleRefs), func(r config.RoleRef) bool { return r.Key != "enforcement.default_role" })
			if len(starts) == 0 {
				starts = []config.RoleRef{{Role: cfg.DefaultRole, Place: config.Place{Key: "the default role"}}}
			}
		}
		for _, start := range starts {
			if known(start.Role) && !m.Covers[start.Role] {
				errs = append(errs, ceiling.Errorf("agent %s starts in role %s (%s), which is beyond its max_role %s",
					ceiling.Agent, start.Role, start.Key, ceiling.Role))
			}
		}
	}
	return errs
}

// Summary is what a load found: the roles by source, where they and the
// configuration came from, the custom policies, the enforcement mode and
// the warnings. `harness check` reports it.
type Summary struct {
	Roles RoleCounts `json:"roles"`
	// ProjectRoles and UserRoles are the role directories: of the
	// project's layers (FoundLayers), and the user's.
	ProjectRoles []string `json:"project_roles"`
	UserRoles    []string `json:"user_roles"`
	// Configuration are the harness.toml files read.
	Configuration []string `json:"configuration"`
	// CustomPolicies and TestFiles count the custom policy modules and
	// their *_test.rego files.
	CustomPolicies int      `json:"custom_policies"`
	TestFiles      int      `json:"test_files"`
	Mode           string   `json:"mode"`
	Warnings       []string `json:"warnings"`
	// Alerts are the [[alerts]], without their URLs (some are secrets).
	Alerts []AlertSummary `json:"alerts"`
}

// AlertSummary is one [[alerts]] as check shows it.
type AlertSummary struct {
	Name string `json:"name"`
	// Events are the types it sends; empty: every type.
	Events []string `json:"events"`
	Format string   `json:"format"`
}

// RoleCounts are the roles of a load, in all and by source.
type RoleCounts struct {
	Total   int `json:"total"`
	Builtin int `json:"builtin"`
	User    int `json:"user"`
	Project int `json:"project"`
}

// Summary summarises the load.
func (h *Harness) Summary() Summary {
	s := Summary{ProjectRoles: []string{}, UserRoles: slices.Clone(h.RoleDirs.User), Configuration: slices.Clone(h.Config.Files),
		Mode: string(h.Config.Mode), Warnings: h.Warnings()}
	if s.UserRoles == nil {
		s.UserRoles = []string{}
	}
	if s.Configuration == nil {
		s.Configuration = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	s.Alerts = []AlertSummary{}
	for _, a := range h.Config.Alerts {
		format := a.Format
		if format == "" {
			format = "json"
		}
		s.Alerts = append(s.Alerts, AlertSummary{Name: a.Name, Events: append([]string{}, a.Events...), Format: format})
	}
	for _, r := range h.Roles.All() {
		s.Roles.Total++
		switch r.Source {
		case roles.SourceBuiltin:
			s.Roles.Builtin++
		case roles.SourceUser:
			s.Roles.User++
		case roles.SourceProject:
			s.Roles.Project++
		}
	}
	for _, layer := range h.FoundLayers() {
		s.ProjectRoles = append(s.ProjectRoles, filepath.Join(layer, "roles"))
	}
	for _, m := range h.Custom {
		if custom.IsTest(m) {
			s.TestFiles++
		} else {
			s.CustomPolicies++
		}
	}
	return s
}

// Binaries are the harness binary exe and the small hook binary beside it
// (hook.SmallName, whether it is there yet or not) when the user may
// replace them, that is when exe or its directory is writable: an agent
// that put a program answering nothing in their place would run every
// later call ungoverned (an installed hook runs one of them, and an MCP
// client starts the gateway from the other). A binary the user may not
// replace (a root-owned /usr/local/bin) is not listed: the agent, as the
// same user, cannot change it, and commands that name it stay the
// agent's. None for exe "" or a relative path.
func Binaries(exe string) []string {
	if !filepath.IsAbs(exe) {
		return nil
	}
	dir := filepath.Dir(exe)
	if !writable(exe) && !writable(dir) {
		return nil
	}
	return []string{exe, filepath.Join(dir, hook.SmallName)}
}

// onPath is "harness" as the PATH finds it when that is the binary exe
// under another name (a symbolic link to it, as ~/.local/bin/harness or a
// Homebrew bin/harness): what a project's hook and an MCP client run. ""
// when it is exe itself, another binary or none.
func onPath(exe, pathList string) string {
	if !filepath.IsAbs(exe) {
		return ""
	}
	found, err := hook.LookPath("harness", pathList)
	if err != nil || found == exe || !filepath.IsAbs(found) {
		return ""
	}
	a, errA := os.Stat(found)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return ""
	}
	return found
}

// writable says whether this process may write path (access(2) W_OK).
func writable(path string) bool {
	return syscall.Access(path, 2) == nil
}
