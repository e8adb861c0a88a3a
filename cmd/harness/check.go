package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/config"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// check validates every role file and configuration file, reports all their
// errors together, and prepares the policy with them.
func (c *cli) check(args []string) int {
	fs, project := c.flags("check")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	root, dirs, err := c.locate(*project)
	if err != nil {
		return c.fail("%v", err)
	}
	cfg, cfgErr := config.Load(config.Files(c.env.home, root))
	set, rolesErr := roles.Load(dirs)
	mods, modsErr := custom.Load(c.policyDirs(root))
	var all strict.ErrorList
	for _, err := range []error{cfgErr, rolesErr, modsErr} {
		var list strict.ErrorList
		switch {
		case err == nil:
		case errors.As(err, &list):
			all = append(all, list...)
		default:
			return c.fail("%v", err)
		}
	}
	if len(all) > 0 {
		for _, e := range all.Sort() {
			fmt.Fprintln(c.stdout, e)
		}
		fmt.Fprintf(c.stdout, "%d error(s) in role, configuration or policy files\n", len(all))
		return exitCheck
	}
	w := &world{root: root, dirs: dirs, cfg: cfg, set: set, custom: mods}
	doc := compiler.Compile(set, w.compilerConfig())
	if _, err := policy.New(context.Background(), doc, mods...); err != nil {
		var list strict.ErrorList
		if !errors.As(err, &list) {
			list = strict.ErrorList{{Msg: err.Error()}}
		}
		for _, e := range list {
			fmt.Fprintln(c.stdout, e)
		}
		fmt.Fprintf(c.stdout, "%d error(s) in role, configuration or policy files\n", len(list))
		return exitCheck
	}
	if _, ok := set.Get(cfg.DefaultRole); !ok {
		fmt.Fprintf(c.stdout, "enforcement.default_role: %s\n", unknownRole(cfg.DefaultRole, set))
		return exitCheck
	}
	if problems := agentProblems(cfg, doc, set); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(c.stdout, p)
		}
		fmt.Fprintf(c.stdout, "%d error(s) in role, configuration or policy files\n", len(problems))
		return exitCheck
	}
	count := map[roles.Source]int{}
	for _, r := range set.All() {
		count[r.Source]++
	}
	fmt.Fprintf(c.stdout, "ok: %d roles (%d built-in, %d user, %d project)\n",
		set.Len(), count[roles.SourceBuiltin], count[roles.SourceUser], count[roles.SourceProject])
	if dirs.Project != "" {
		fmt.Fprintf(c.stdout, "project roles: %s\n", dirs.Project)
	}
	for _, u := range dirs.User {
		fmt.Fprintf(c.stdout, "user roles:    %s\n", u)
	}
	for _, f := range cfg.Files {
		fmt.Fprintf(c.stdout, "configuration: %s\n", f)
	}
	policies, tests := 0, 0
	for _, m := range mods {
		if custom.IsTest(m) {
			tests++
		} else {
			policies++
		}
	}
	fmt.Fprintf(c.stdout, "custom policies: %d (%d test files)\n", policies, tests)
	fmt.Fprintf(c.stdout, "mode: %s\n", cfg.Mode)
	return exitOK
}

// compile writes the OPA bundle directory.
func (c *cli) compile(args []string) int {
	fs, project := c.flags("compile")
	out := fs.String("out", "", "the bundle `DIR` to write (required)")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	if *out == "" {
		return c.fail("compile: --out DIR is required")
	}
	w, ok := c.load(*project)
	if !ok {
		return exitError
	}
	e, ok := c.engine(context.Background(), w)
	if !ok {
		return exitError
	}
	b, err := compiler.NewBundle(e.Document(), append(e.Bundle().Modules, policy.TestModules()...))
	if err != nil {
		return c.fail("compile: %v", err)
	}
	if err := b.Write(*out); err != nil {
		return c.fail("compile: %v", err)
	}
	fmt.Fprintf(c.stdout, "wrote %s: %d roles, %d Rego modules (%d custom), data.json, .manifest\n", *out, w.set.Len(), len(b.Modules), len(w.custom))
	return exitOK
}

// agentProblems checks the agents' roles against the roles there are: each
// starting role and most privileged role exists, and each agent starts
// within its most privileged role.
func agentProblems(cfg config.Config, doc *compiler.Document, set *roles.Set) []string {
	var out []string
	starts := map[string][]string{}
	for _, agent := range slices.Sorted(maps.Keys(cfg.AgentRoles)) {
		starts[agent] = append(starts[agent], cfg.AgentRoles[agent])
	}
	for _, t := range cfg.Tokens {
		if t.Role != "" {
			starts[t.Agent] = append(starts[t.Agent], t.Role)
		}
	}
	for _, agent := range slices.Sorted(maps.Keys(starts)) {
		for _, r := range slices.Compact(slices.Sorted(slices.Values(starts[agent]))) {
			if _, ok := doc.Roles[r]; !ok {
				out = append(out, fmt.Sprintf("agent %s: starting role: %s", agent, unknownRole(r, set)))
			}
		}
	}
	for _, agent := range slices.Sorted(maps.Keys(cfg.AgentMaxRoles)) {
		limit := cfg.AgentMaxRoles[agent]
		m, ok := doc.Roles[limit]
		if !ok {
			out = append(out, fmt.Sprintf("agent %s: max_role: %s", agent, unknownRole(limit, set)))
			continue
		}
		for _, r := range slices.Compact(slices.Sorted(slices.Values(starts[agent]))) {
			if _, known := doc.Roles[r]; known && !m.Covers[r] {
				out = append(out, fmt.Sprintf("agent %s starts in role %s, which is beyond its max_role %s", agent, r, limit))
			}
		}
	}
	return out
}
