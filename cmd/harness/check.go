package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// check validates every role file and prepares the policy with them.
func (c *cli) check(args []string) int {
	fs, project := c.flags("check")
	rest, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	if len(rest) > 0 {
		return c.fail("check: unexpected argument %q", rest[0])
	}
	d, err := c.dirs(*project)
	if err != nil {
		return c.fail("%v", err)
	}
	set, err := roles.Load(d)
	if err != nil {
		var list roles.ErrorList
		if !errors.As(err, &list) {
			return c.fail("%v", err)
		}
		for _, e := range list {
			fmt.Fprintln(c.stdout, e)
		}
		fmt.Fprintf(c.stdout, "%d error(s) in role files\n", len(list))
		return exitCheck
	}
	if _, err := policy.New(context.Background(), compiler.Compile(set, compiler.DefaultConfig())); err != nil {
		fmt.Fprintf(c.stdout, "policy: %v\n", err)
		return exitCheck
	}
	count := map[roles.Source]int{}
	for _, r := range set.All() {
		count[r.Source]++
	}
	fmt.Fprintf(c.stdout, "ok: %d roles (%d built-in, %d user, %d project)\n",
		set.Len(), count[roles.SourceBuiltin], count[roles.SourceUser], count[roles.SourceProject])
	if d.Project != "" {
		fmt.Fprintf(c.stdout, "project roles: %s\n", filepath.Clean(d.Project))
	}
	for _, u := range d.User {
		fmt.Fprintf(c.stdout, "user roles:    %s\n", u)
	}
	return exitOK
}

// compile writes the OPA bundle directory.
func (c *cli) compile(args []string) int {
	fs, project := c.flags("compile")
	out := fs.String("out", "", "the bundle `DIR` to write (required)")
	rest, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	if len(rest) > 0 {
		return c.fail("compile: unexpected argument %q", rest[0])
	}
	if *out == "" {
		return c.fail("compile: --out DIR is required")
	}
	set, ok := c.load(*project)
	if !ok {
		return exitError
	}
	b, err := compiler.NewBundle(compiler.Compile(set, compiler.DefaultConfig()), append(policy.Modules(), policy.TestModules()...))
	if err != nil {
		return c.fail("compile: %v", err)
	}
	if err := b.Write(*out); err != nil {
		return c.fail("compile: %v", err)
	}
	fmt.Fprintf(c.stdout, "wrote %s: %d roles, %d Rego modules, data.json, .manifest\n", *out, set.Len(), len(b.Modules))
	return exitOK
}
