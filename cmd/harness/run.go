package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/strict"
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
	// process is true in the real command (not in tests): the hook may use
	// and start its daemon.
	process bool
	ctx     context.Context // ends on an interrupt (events --follow, serve)
	stdin   io.Reader       // serve: the MCP client over stdio
	getenv  func(string) string
	workDir string
	home    string
}

func osEnv(ctx context.Context) env {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	return env{process: true, ctx: ctx, stdin: os.Stdin, getenv: os.Getenv, workDir: wd, home: home}
}

const usage = `harness: governance for AI coding agents (roles, budgets, decisions)

Usage:
  harness decide --tool T [--role R] [--args JSON] [--tokens N] [--shell N] [--cost USD] [--json]
  harness decide --session S --tool T [--record] [--role R] [--args JSON] [--json]
                 [--explain] [--trace[=full|notes|fails|debug]]
  harness record --session S --tool T (--output-file F | --output-text TEXT) [--args JSON] [--model M]
  harness budget --session S [--agent A] [--json]
  harness budget reset --session S [--agent A]
  harness sessions [--session S] [--agent A] [--json]
  harness role --session S
  harness role set NAME --session S        (the operator: may enter privileged roles)
  harness role switch NAME --session S     (as the agent: under the switch rules)
  harness events [--follow] [--type T] [--session S] [--json]
  harness log [--decision ID] [--session S] [--limit N] [--json]
  harness roles list
  harness roles show NAME [--json]
  harness serve [--http ADDR] [--session S] [--agent A] [--role R] [-- CMD ARGS...]
  harness compress [--stats] < OUTPUT
  harness hook claude-code                 (Claude Code's PreToolUse/PostToolUse hook)
  harness hook install [--project|--user] [--dir DIR] [--write]
  harness check
  harness compile --out DIR
  harness test [PATH...] [-v] [--coverage] [--format pretty|json]

Common flags:
  --project DIR   the project root (default: found by walking up from the working directory)
  --ledger URL    the counters' store: memory:, sqlite:PATH or redis://host:port/db
                  (default: [ledger] url of harness.toml, else an SQLite file in the
                  user's state directory)
  --session S     the session (default: $HARNESS_SESSION); --agent A (default: $HARNESS_AGENT).
                  Without an agent, --session S is the session S of the one agent that has
                  one (several: name the agent). Commands that read a session say so when
                  the ledger has none; a session starts with its first decision.

Custom Rego policies (package harness.custom.<name>, with deny and warn rules) come from
the project's .lean-ctx/policies/ and the user's ~/.lean-ctx/policies/.
Roles come from the project's .lean-ctx/roles/, the user's ~/.lean-ctx/roles/ and
$XDG_DATA_HOME/lean-ctx/roles/, and the five built-ins (coder, reviewer, debugger, ops, admin).
A new session's role is --role, else its agent's [agents.NAME] role in harness.toml, else
$LEAN_CTX_ROLE, else [enforcement] default_role (coder). A session keeps its role: only a
switch changes it, and a switch never resets usage.

Exit codes: 0 allowed (or warned), 1 usage or load error, 2 denied (test: a test failed),
3 role, configuration or policy files have errors. In shadow mode ([enforcement] mode = "shadow") a deny is reported but exits 0.
`

// run is the whole command.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runEnv(args, stdout, stderr, osEnv(ctx))
}

func runEnv(args []string, stdout, stderr io.Writer, e env) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	if e.ctx == nil {
		e.ctx = context.Background()
	}
	if e.stdin == nil {
		e.stdin = strings.NewReader("")
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
	case "record":
		return c.record(args[1:])
	case "budget":
		return c.budget(args[1:])
	case "sessions":
		return c.sessions(args[1:])
	case "events":
		return c.events(args[1:])
	case "log":
		return c.log(args[1:])
	case "test":
		return c.test(args[1:])
	case "role":
		return c.role(args[1:])
	case "serve":
		return c.serve(args[1:])
	case "compress":
		return c.compress(args[1:])
	case "hook":
		return c.hook(args[1:])
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

// parseNone parses flags where a command takes no positional argument; it
// reports a bad flag or an extra argument (with hint, if any) and returns
// false then.
func (c *cli) parseNone(fs *flag.FlagSet, args []string, hint string) bool {
	rest, err := parse(fs, args)
	if err != nil {
		return false
	}
	if len(rest) > 0 {
		msg := fmt.Sprintf("%s: unexpected argument %q", strings.TrimPrefix(fs.Name(), "harness "), rest[0])
		if hint != "" {
			msg += " (" + hint + ")"
		}
		c.fail("%s", msg)
		return false
	}
	return true
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

// params are the load parameters of this run: its surroundings and
// --project.
func (c *cli) params(project string) app.Params {
	return app.Params{Project: project, Env: app.Env{WorkDir: c.env.workDir, Home: c.env.home, Getenv: c.env.getenv}}
}

// load loads the world (see app.Load); on error it prints every problem
// and returns false.
func (c *cli) load(p app.Params) (*app.Harness, bool) {
	h, err := app.Load(c.env.ctx, p)
	if err != nil {
		c.printErrors(err)
		return nil, false
	}
	return h, true
}

func (c *cli) printErrors(err error) {
	var list strict.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(c.stderr, e)
		}
		fmt.Fprintf(c.stderr, "harness: %d error(s) in role, configuration or policy files\n", len(list))
		return
	}
	c.fail("%v", err)
}

// open loads the world and opens its governor on the ledger (--ledger,
// else the configuration's): the common start of the commands that use
// the ledger. With readOnly, for the commands that only show what it
// holds, the ledger is opened for reading and no log is opened: nothing
// is created or written. The caller closes h when done.
func (c *cli) open(project, ledger string, readOnly bool) (*app.Harness, *govern.Governor, bool) {
	h, ok := c.load(c.params(project))
	if !ok {
		return nil, nil, false
	}
	g, err := h.Open(c.env.ctx, app.OpenOptions{Ledger: ledger, Warn: c.warn, ReadOnly: readOnly})
	if err != nil {
		h.Close()
		c.fail("%v", err)
		return nil, nil, false
	}
	return h, g, true
}

// warn prints what went wrong without stopping the command.
func (c *cli) warn(err error) { fmt.Fprintf(c.stderr, "harness: warning: %v\n", err) }

// sessionFlags adds --session, --agent and --ledger, the flags of the
// commands that use a session's counters.
func sessionFlags(fs *flag.FlagSet) (session, agent, ledger *string) {
	session = fs.String("session", "", "the session (default: $HARNESS_SESSION)")
	agent = fs.String("agent", "", "the agent (default: $HARNESS_AGENT)")
	ledger = fs.String("ledger", "", "the counters' store `URL` (default: [ledger] url, else the SQLite file in the state directory)")
	return session, agent, ledger
}

// session is the session the flags name: --session (else
// $HARNESS_SESSION) and --agent (else $HARNESS_AGENT); agentGiven says
// whether an agent was named at all (--agent "" names the sessions of no
// agent).
func (c *cli) session(fs *flag.FlagSet, session, agent string) (id, ag string, agentGiven bool) {
	id, ag = session, agent
	if id == "" {
		id = c.env.getenv("HARNESS_SESSION")
	}
	fs.Visit(func(f *flag.Flag) { agentGiven = agentGiven || f.Name == "agent" })
	if !agentGiven {
		ag = c.env.getenv("HARNESS_AGENT")
		agentGiven = ag != ""
	}
	return id, ag, agentGiven
}

// existing is the session the flags name, which the ledger must have
// (see govern.Governor.Find: without an agent, the one agent that has a
// session of that id); else it says how to find one and returns false.
func (c *cli) existing(g *govern.Governor, fs *flag.FlagSet, session, agent string) (budget.Key, bool) {
	cmd := strings.TrimPrefix(fs.Name(), "harness ")
	id, ag, given := c.session(fs, session, agent)
	if id == "" {
		c.fail("%s: name the session with --session S or $HARNESS_SESSION (harness sessions lists them)", cmd)
		return budget.Key{}, false
	}
	k, found, err := g.Find(c.env.ctx, id, ag, given)
	switch {
	case err != nil:
		c.fail("%s: %v", cmd, err)
		return k, false
	case !found:
		c.fail("%s: no session %s in the ledger (harness sessions lists them)", cmd, k)
		return k, false
	}
	return k, true
}

// unknownRole explains a role name that is not defined.
func unknownRole(name string, set *roles.Set) string {
	return fmt.Sprintf("unknown role %q; available roles: %s", name, strings.Join(set.Names(), ", "))
}
