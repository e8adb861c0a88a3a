package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/internal/progress"
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
	// exe is the binary this process runs ("" in tests): its own files.
	exe string
	// build is how this binary was built (harness version); nil for
	// app.CurrentBuild.
	build func() app.Build
}

func osEnv(ctx context.Context) env {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	exe, _ := os.Executable()
	return env{process: true, ctx: ctx, stdin: os.Stdin, getenv: os.Getenv, workDir: wd, home: home, exe: exe}
}

// run is the whole command.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runEnv(args, stdout, stderr, osEnv(ctx))
}

// runEnv runs the command line args in the surroundings e and returns the
// exit code. The command tree is cobra's (flags, help, suggestions,
// completion); each command's run returns its own exit code.
func runEnv(args []string, stdout, stderr io.Writer, e env) int {
	if e.ctx == nil {
		e.ctx = context.Background()
	}
	if e.stdin == nil {
		e.stdin = strings.NewReader("")
	}
	if e.getenv == nil {
		e.getenv = func(string) string { return "" }
	}
	if e.build == nil {
		e.build = app.CurrentBuild
	}
	c := &cli{stdout: stdout, stderr: stderr, env: e}
	root := c.command()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(e.stdin)
	cmd, err := root.ExecuteContextC(e.ctx)
	var exit exitCode
	switch {
	case err == nil:
		return c.code
	case errors.As(err, &exit): // reported already
		return int(exit)
	}
	c.usageError(cmd, err)
	return exitError
}

// cli holds the writers, surroundings and global flags of one run, and
// the exit code of the command that ran.
type cli struct {
	stdout, stderr io.Writer
	env            env
	project        string // --project, a flag of every command
	code           int
	// meter is the progress line shown, if any, which a message clears
	// first.
	meter *progress.Meter
}

// exitCode is the error of a command that has reported its own problem
// and exits with this code.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// runs makes a cobra run function of f, which returns the exit code.
func (c *cli) runs(f func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c.code = f(cmd, args)
		return nil
	}
}

// name is a command's name as its messages give it: "budget reset".
func name(cmd *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), "harness"), " ")
}

func (c *cli) fail(format string, args ...any) int {
	c.meter.Done()
	fmt.Fprintf(c.stderr, "harness: %s\n", printableLines(fmt.Sprintf(format, args...)))
	return exitError
}

// printableLines is s with each of its lines shown Printable: an error
// may quote a project's files (a section's name, a file's name), which
// are the agent's to write, and must not drive the operator's terminal.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = contract.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// params are the load parameters of this run: its surroundings and
// --project.
func (c *cli) params() app.Params {
	return app.Params{Project: c.project, Env: app.Env{WorkDir: c.env.workDir, Home: c.env.home, Getenv: c.env.getenv}, Exe: c.env.exe}
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
	c.meter.Done()
	var list strict.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(c.stderr, printableLines(e.Error()))
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
func (c *cli) open(ledger string, readOnly bool) (*app.Harness, *govern.Governor, bool) {
	h, ok := c.load(c.params())
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
func (c *cli) warn(err error) { c.meter.Done(); fmt.Fprintf(c.stderr, "harness: warning: %v\n", err) }

// sessionFlags are --session, --agent and --ledger, the flags of the
// commands that use a session's counters.
type sessionFlags struct{ session, agent, ledger string }

// add adds the flags to fs.
func (f *sessionFlags) add(fs flagSet) {
	fs.StringVar(&f.session, "session", "", "the session `ID` (default: $HARNESS_SESSION)")
	fs.StringVar(&f.agent, "agent", "", "the `AGENT` whose session it is (default: $HARNESS_AGENT; \"\" names the session of no agent)")
	ledgerFlag(fs, &f.ledger)
}

// ledgerFlag adds --ledger to fs.
func ledgerFlag(fs flagSet, ledger *string) {
	fs.StringVar(ledger, "ledger", "", "the counters' store `URL`: memory:, sqlite:PATH, redis://host:port/db, redis+cluster://host:port,... or redis+sentinel://host:port,.../master (default: [ledger] url of harness.toml, else the SQLite file in the state directory)")
}

// flagSet is what sessionFlags need of a pflag.FlagSet.
type flagSet interface {
	StringVar(p *string, name, value, usage string)
}

// session is the session the flags name: --session (else
// $HARNESS_SESSION) and --agent (else $HARNESS_AGENT); agentGiven says
// whether an agent was named at all (--agent "" names the sessions of no
// agent).
func (c *cli) session(cmd *cobra.Command, f sessionFlags) (id, ag string, agentGiven bool) {
	id, ag = f.session, f.agent
	if id == "" {
		id = c.env.getenv("HARNESS_SESSION")
	}
	agentGiven = cmd.Flags().Changed("agent")
	if !agentGiven {
		ag = c.env.getenv("HARNESS_AGENT")
		agentGiven = ag != ""
	}
	return id, ag, agentGiven
}

// existing is the session the flags name, which the ledger must have
// (see govern.Governor.Find: without an agent, the one agent that has a
// session of that id); else it says how to find one and returns false.
func (c *cli) existing(g *govern.Governor, cmd *cobra.Command, f sessionFlags) (budget.Key, bool) {
	id, ag, given := c.session(cmd, f)
	if id == "" {
		c.fail("%s: name the session with --session S or $HARNESS_SESSION (harness sessions lists them)", name(cmd))
		return budget.Key{}, false
	}
	k, found, err := g.Find(c.env.ctx, id, ag, given)
	switch {
	case err != nil:
		c.fail("%s: %v", name(cmd), err)
		return k, false
	case !found:
		c.fail("%s: no session %s in the ledger (harness sessions lists them)", name(cmd), k)
		return k, false
	}
	return k, true
}

// printJSON writes v as indented JSON, and returns the exit code.
func (c *cli) printJSON(v any) int {
	if err := c.writeJSON(v); err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}

// unknownRole explains a role name that is not defined.
func unknownRole(name string, set *roles.Set) string {
	return fmt.Sprintf("unknown role %q; available roles: %s", name, strings.Join(set.Names(), ", "))
}
