package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// check loads everything as every command does, and reports every problem
// of every file together (exit 3), or what was loaded.
func (c *cli) check(args []string) int {
	fs, project := c.flags("check")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	h, err := app.Load(c.env.ctx, c.params(*project))
	var list strict.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(c.stdout, e)
		}
		fmt.Fprintf(c.stdout, "%d error(s) in role, configuration or policy files\n", len(list))
		return exitCheck
	case err != nil:
		return c.fail("%v", err)
	}
	count := map[roles.Source]int{}
	for _, r := range h.Roles.All() {
		count[r.Source]++
	}
	for _, w := range h.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	fmt.Fprintf(c.stdout, "ok: %d roles (%d built-in, %d user, %d project)\n",
		h.Roles.Len(), count[roles.SourceBuiltin], count[roles.SourceUser], count[roles.SourceProject])
	for _, layer := range h.FoundLayers() {
		fmt.Fprintf(c.stdout, "project roles: %s\n", filepath.Join(layer, "roles"))
	}
	for _, u := range h.RoleDirs.User {
		fmt.Fprintf(c.stdout, "user roles:    %s\n", u)
	}
	for _, f := range h.Config.Files {
		fmt.Fprintf(c.stdout, "configuration: %s\n", f)
	}
	policies, tests := 0, 0
	for _, m := range h.Custom {
		if custom.IsTest(m) {
			tests++
		} else {
			policies++
		}
	}
	fmt.Fprintf(c.stdout, "custom policies: %d (%d test files)\n", policies, tests)
	fmt.Fprintf(c.stdout, "mode: %s\n", h.Config.Mode)
	for _, a := range h.Config.Alerts {
		what := "every event"
		if len(a.Events) > 0 {
			what = strings.Join(a.Events, ", ")
		}
		format := a.Format
		if format == "" {
			format = "json"
		}
		fmt.Fprintf(c.stdout, "alert %s: %s, as %s\n", a.Name, what, format) // never the URL: it can be a secret
	}
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
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	b, err := compiler.NewBundle(h.Engine.Document(), append(h.Engine.Bundle().Modules, policy.TestModules()...))
	if err != nil {
		return c.fail("compile: %v", err)
	}
	if err := b.Write(*out); err != nil {
		return c.fail("compile: %v", err)
	}
	fmt.Fprintf(c.stdout, "wrote %s: %d roles, %d Rego modules (%d custom), data.json, .manifest\n", *out, h.Roles.Len(), len(b.Modules), len(h.Custom))
	return exitOK
}
