package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// Exit codes.
const (
	exitOK     = 0
	exitError  = 1 // usage, load or internal error
	exitDenied = 2 // decide: the call is denied
	exitCheck  = 3 // check: role files have errors
)

// env is what the command reads of its surroundings, so that tests can give
// their own.
type env struct {
	getenv  func(string) string
	workDir string
	home    string
}

func osEnv() env {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	return env{getenv: os.Getenv, workDir: wd, home: home}
}

const usage = `harness: governance for AI coding agents (roles, budgets, decisions)

Usage:
  harness decide --tool T [--role R] [--args JSON] [--tokens N] [--shell N] [--cost USD] [--json]
  harness roles list
  harness roles show NAME [--json]
  harness check
  harness compile --out DIR

Common flags:
  --project DIR   the project root (default: found by walking up from the working directory)

Roles come from the project's .lean-ctx/roles/, the user's ~/.lean-ctx/roles/ and
$XDG_DATA_HOME/lean-ctx/roles/, and the five built-ins (coder, reviewer, debugger, ops, admin).
The role of decide is --role, else $LEAN_CTX_ROLE, else coder.

Exit codes: 0 allowed (or warned), 1 usage or load error, 2 denied, 3 role files have errors.
`

// run is the whole command.
func run(args []string, stdout, stderr io.Writer) int {
	return runEnv(args, stdout, stderr, osEnv())
}

func runEnv(args []string, stdout, stderr io.Writer, e env) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	c := &cli{stdout: stdout, stderr: stderr, env: e}
	switch args[0] {
	case "decide":
		return c.decide(args[1:])
	case "roles":
		return c.roles(args[1:])
	case "check":
		return c.check(args[1:])
	case "compile":
		return c.compile(args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "harness: unknown command %q\n\n%s", args[0], usage)
	return exitError
}

// cli holds the writers and surroundings of one run.
type cli struct {
	stdout, stderr io.Writer
	env            env
}

func (c *cli) fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "harness: "+format+"\n", args...)
	return exitError
}

// flags makes a flag set for a subcommand, with the common --project flag.
func (c *cli) flags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("harness "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	project := fs.String("project", "", "project root `DIR` (default: found from the working directory)")
	return fs, project
}

// parse parses flags and positional arguments in any order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// dirs returns the role directories for --project (or the working directory).
func (c *cli) dirs(project string) (roles.Dirs, error) {
	if project != "" {
		fi, err := os.Stat(project)
		if err != nil {
			return roles.Dirs{}, fmt.Errorf("--project: %w", err)
		}
		if !fi.IsDir() {
			return roles.Dirs{}, fmt.Errorf("--project %s: not a directory", project)
		}
	}
	return roles.FindDirs(roles.Locate{
		Project:     project,
		WorkDir:     c.env.workDir,
		Home:        c.env.home,
		XDGDataHome: c.env.getenv("XDG_DATA_HOME"),
	}), nil
}

// load reads and resolves the roles; on error it prints every problem.
func (c *cli) load(project string) (*roles.Set, bool) {
	d, err := c.dirs(project)
	if err != nil {
		c.fail("%v", err)
		return nil, false
	}
	set, err := roles.Load(d)
	if err != nil {
		c.printLoadError(err)
		return nil, false
	}
	return set, true
}

func (c *cli) printLoadError(err error) {
	var list roles.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(c.stderr, e)
		}
		fmt.Fprintf(c.stderr, "harness: %d error(s) in role files\n", len(list))
		return
	}
	c.fail("%v", err)
}

// engine loads the roles and prepares the policy.
func (c *cli) engine(ctx context.Context, project string) (*policy.Engine, *roles.Set, bool) {
	set, ok := c.load(project)
	if !ok {
		return nil, nil, false
	}
	e, err := policy.New(ctx, compiler.Compile(set, compiler.DefaultConfig()))
	if err != nil {
		c.fail("%v", err)
		return nil, nil, false
	}
	return e, set, true
}

// unknownRole explains a role name that is not defined.
func unknownRole(name string, set *roles.Set) string {
	return fmt.Sprintf("unknown role %q; available roles: %s", name, strings.Join(set.Names(), ", "))
}
