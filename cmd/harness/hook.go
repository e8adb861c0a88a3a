package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookd"
	"github.com/agentharness/harness/roles"
)

func (c *cli) hookCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook (claude-code | install)",
		Short: "Govern Claude Code's own tools through its hooks",
		Long: `Hook governs the tools Claude Code runs itself (Bash, Edit, Write, Read, Grep, and
its MCP tools) through its PreToolUse and PostToolUse hooks: hook claude-code is the
hook, hook install puts it in Claude Code's settings.`,
		Example: `  harness hook install --project --write
  harness hook install --user --write`,
		RunE: group("claude-code (the hook itself), or install"),
	}
	cmd.AddCommand(c.hookClaudeCodeCmd(), c.hookInstallCmd(), c.hookDaemonCmd())
	return cmd
}

func (c *cli) hookClaudeCodeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "claude-code",
		Short: "Answer one Claude Code hook call: the payload on stdin, the answer on stdout",
		Long: `Claude-code answers one PreToolUse or PostToolUse call of Claude Code: the payload
on stdin, the answer on stdout, and the exit code as the hook protocol wants it (2
refuses a call). It never crashes and answers within its deadline: a call it cannot
decide is refused. It hands the payload to the hook daemon when one runs, and starts
one when none does.`,
		Example: `  echo '{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}}' | harness hook claude-code`,
		RunE:    c.runs(func(cmd *cobra.Command, _ []string) int { return c.hookClaudeCode() }),
	}
	// Claude Code lets a tool run when its hook exits with anything but 2:
	// a hook installed with a bad flag must refuse, not pass.
	cmd.SetFlagErrorFunc(func(*cobra.Command, error) error {
		fmt.Fprintln(c.stderr, "harness hook: refusing the call: the hook's command line is wrong (reinstall it: harness hook install)")
		return exitCode(hook.ExitRefused)
	})
	return cmd
}

// hookClaudeCode answers one Claude Code hook call: the payload on stdin,
// the answer on stdout, the exit code as the protocol wants it. The daemon
// answers if one runs; else this process does, and starts one. Either way
// the answer comes within hookd.Deadline ($HARNESS_HOOK_DEADLINE may
// shorten it).
func (c *cli) hookClaudeCode() int {
	p := c.params()
	client := hookd.Client{Project: c.project, Env: p.Env}
	if v := c.env.getenv("HARNESS_HOOK_DEADLINE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(c.stderr, "harness hook: warning: HARNESS_HOOK_DEADLINE=%q is not a duration; the deadline is %v\n", v, hookd.Deadline)
		}
		client.Deadline = d
	}
	if c.env.process && c.env.getenv("HARNESS_HOOK_DAEMON") != "off" {
		client.Socket = hookd.SocketPath(p.Env)
		if exe, err := os.Executable(); err == nil {
			client.Start = func() error { return hookd.Start(exe, "hook", "daemon") }
		}
	}
	resp := client.Answer(c.env.ctx, c.env.stdin)
	c.stdout.Write(resp.Stdout)
	io.WriteString(c.stderr, resp.Stderr)
	return resp.Exit
}

func (c *cli) hookDaemonCmd() *cobra.Command {
	var f struct {
		idle                     time.Duration
		metrics, tlsCert, tlsKey string
		allowRemote              bool
	}
	cmd := &cobra.Command{
		Use:    "daemon [flags]",
		Short:  "Serve hook calls on the user's socket until idle (started by the hook itself)",
		Hidden: true,
		Args:   noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			env := c.params().Env
			c.longRunning()
			o := hookd.Options{Socket: hookd.SocketPath(env), Idle: f.idle, Metrics: f.metrics, AllowRemote: f.allowRemote,
				TLSCert: f.tlsCert, TLSKey: f.tlsKey, Env: env,
				Logf: func(format string, a ...any) {
					fmt.Fprintf(c.stderr, "harness hook daemon: %s\n", contract.Printable(fmt.Sprintf(format, a...)))
				}}
			if err := hookd.Serve(c.env.ctx, o); err != nil {
				return c.fail("hook daemon: %v", err)
			}
			return exitOK
		}),
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.idle, "idle", hookd.DefaultIdle, "exit after this long without a call")
	fs.StringVar(&f.metrics, "metrics", "", "serve /metrics, /healthz and /readyz on `ADDR` (host:port, loopback unless --allow-remote)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow --metrics on an address that is not loopback; a [metrics] token and TLS are then required")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "with --metrics: serve HTTPS with the certificate chain in `FILE` (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "with --metrics: the private key of --tls-cert in `FILE` (PEM)")
	return cmd
}

func (c *cli) hookInstallCmd() *cobra.Command {
	var f struct {
		dir                    string
		user, inProject, write bool
	}
	cmd := &cobra.Command{
		Use:   "install [--project | --user] [--write] [flags]",
		Short: "Put the hook and its permission rules in Claude Code's settings",
		Long: `Install prints the hook configuration (PreToolUse, PostToolUse and
PostToolUseFailure hooks running harness hook claude-code, or the small harness-hook
binary when it is installed beside the harness, and the permission rules
that keep the agent's tools off the harness's own files and the operator's commands),
or with --write merges it into the project's .claude/settings.json (--project, the
default) or the user's ~/.claude/settings.json (--user), keeping every other setting,
the file's key order and formatting, and adding nothing twice. The project's shared
file gets only what works on every machine (harness on the PATH); a path of this
machine goes into .claude/settings.local.json, which is not committed. A --dir that
does not exist is refused.`,
		Example: `  harness hook install --project --write
  harness hook install --user --write`,
		RunE: c.runs(func(cmd *cobra.Command, args []string) int {
			if len(args) > 0 || (f.user && f.inProject) {
				return c.fail("hook install: want --project or --user, and --write to change the file")
			}
			return c.hookInstall(f.dir, f.user, f.write)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dir, "dir", "", "the project root `DIR` (default: found from the working directory)")
	fs.BoolVar(&f.user, "user", false, "install for every project: ~/.claude/settings.json")
	fs.BoolVar(&f.inProject, "project", false, "install for this project: .claude/settings.json (the default)")
	fs.BoolVar(&f.write, "write", false, "merge the hooks into the settings file (keeping everything else) instead of printing them")
	return cmd
}

// hookInstall prints, or merges into Claude Code's settings, the hook
// configuration.
func (c *cli) hookInstall(dir string, user, write bool) int {
	exe, err := os.Executable()
	if err != nil {
		exe = "harness"
	}
	protected := app.Protected(c.params().Env, exe)
	protected.Hook = hook.Beside(exe) // the small hook binary, when it is installed beside
	var targets []hook.Target
	if user {
		targets = hook.UserTargets(protected)
	} else {
		root := dir
		if root != "" {
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				return c.fail("hook install: --dir %s: not an existing directory (it is not created)", root)
			}
		} else if root = roles.FindProjectRoot(c.env.workDir, c.env.home); root == "" {
			root = c.env.workDir
		}
		onPath := hook.OnPath(exe, func(name string) (string, error) { return hook.LookPath(name, c.env.getenv("PATH")) })
		targets = hook.ProjectTargets(root, protected, onPath)
	}
	events := strings.Join(hook.Events, ", ")
	for _, t := range targets {
		adds := t.Command != "" && !t.UpdateOnly
		if !write {
			if adds || len(t.Rules) > 0 {
				command := ""
				if adds {
					command = t.Command
				}
				b, _ := json.MarshalIndent(hook.Settings(command, t.Rules), "", "  ")
				fmt.Fprintf(c.stdout, "%s\n", b)
				fmt.Fprintf(c.stderr, "harness: merge this into %s, or run harness hook install --write\n", t.Path)
			}
			if t.Note != "" {
				fmt.Fprintf(c.stderr, "harness: %s: %s\n", t.Path, t.Note)
			}
			continue
		}
		changed, err := t.Apply()
		if err != nil {
			return c.fail("hook install: %v", err)
		}
		what := "its permission rules (permissions.deny)"
		if adds {
			what = fmt.Sprintf("the harness hook (%s) and %s", events, what)
		}
		if changed {
			fmt.Fprintf(c.stdout, "installed %s in %s\n", what, t.Path)
		} else if adds || len(t.Rules) > 0 {
			fmt.Fprintf(c.stdout, "%s already has %s\n", t.Path, what)
		}
		if t.Note != "" {
			fmt.Fprintf(c.stdout, "  %s\n", t.Note)
		}
	}
	return exitOK
}
