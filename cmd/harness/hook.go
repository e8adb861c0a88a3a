package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentharness/harness/app"
	"github.com/agentharness/harness/hook"
	"github.com/agentharness/harness/hookd"
	"github.com/agentharness/harness/roles"
)

func (c *cli) hook(args []string) int {
	if len(args) == 0 {
		return c.fail("hook: want claude-code (the hook itself), install, or daemon")
	}
	switch args[0] {
	case "claude-code":
		return c.hookClaudeCode(args[1:])
	case "install":
		return c.hookInstall(args[1:])
	case "daemon":
		return c.hookDaemon(args[1:])
	}
	return c.fail("hook: unknown subcommand %q: want claude-code, install, or daemon", args[0])
}

// hookClaudeCode answers one Claude Code hook call: the payload on stdin,
// the answer on stdout, the exit code as the protocol wants it. The daemon
// answers if one runs; else this process does, and starts one. Either way
// the answer comes within hookd.Deadline ($HARNESS_HOOK_DEADLINE may
// shorten it).
func (c *cli) hookClaudeCode(args []string) int {
	fs, project := c.flags("hook claude-code")
	if _, err := parse(fs, args); err != nil {
		// Claude Code lets a tool run when its hook exits with anything
		// but 2: a hook installed with a bad flag must refuse, not pass.
		fmt.Fprintln(c.stderr, "harness hook: refusing the call: the hook's command line is wrong (reinstall it: harness hook install)")
		return hook.ExitRefused
	}
	p := c.params(*project)
	client := hookd.Client{Project: *project, Env: p.Env}
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

// hookDaemon serves hook calls on the socket until idle.
func (c *cli) hookDaemon(args []string) int {
	fs, _ := c.flags("hook daemon")
	idle := fs.Duration("idle", hookd.DefaultIdle, "exit after this long without a call")
	metricsAddr := fs.String("metrics", "", "serve /metrics, /healthz and /readyz on `ADDR` (host:port, loopback unless --allow-remote)")
	allowRemote := fs.Bool("allow-remote", false, "allow --metrics on an address that is not loopback; a [metrics] token and TLS are then required")
	tlsCert := fs.String("tls-cert", "", "with --metrics: serve HTTPS with the certificate chain in `FILE` (PEM)")
	tlsKey := fs.String("tls-key", "", "with --metrics: the private key of --tls-cert in `FILE` (PEM)")
	if _, err := parse(fs, args); err != nil {
		return exitError
	}
	env := c.params("").Env
	if err := hookd.Serve(c.env.ctx, hookd.Options{Socket: hookd.SocketPath(env), Idle: *idle, Metrics: *metricsAddr, AllowRemote: *allowRemote,
		TLSCert: *tlsCert, TLSKey: *tlsKey, Env: env, Logf: func(f string, a ...any) { fmt.Fprintf(c.stderr, "harness hook daemon: "+f+"\n", a...) }}); err != nil {
		return c.fail("hook daemon: %v", err)
	}
	return exitOK
}

// hookInstall prints, or merges into Claude Code's settings, the hook
// configuration.
func (c *cli) hookInstall(args []string) int {
	flags := flag.NewFlagSet("harness hook install", flag.ContinueOnError)
	flags.SetOutput(c.stderr)
	project := flags.String("dir", "", "the project root `DIR` (default: found from the working directory)")
	user := flags.Bool("user", false, "install for every project: ~/.claude/settings.json")
	inProject := flags.Bool("project", false, "install for this project: .claude/settings.json (the default)")
	write := flags.Bool("write", false, "merge the hooks into the settings file (keeping everything else) instead of printing them")
	rest, err := parse(flags, args)
	if err != nil {
		return exitError
	}
	if len(rest) > 0 || (*user && *inProject) {
		return c.fail("hook install: want --project or --user, and --write to change the file")
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "harness"
	}
	command := hook.Command(exe)
	deny := hook.DenyRules(app.Protected(c.params("").Env, exe))
	var path string
	if *user {
		path = filepath.Join(c.env.home, ".claude", "settings.json")
	} else {
		root := *project
		if root == "" {
			root = roles.FindProjectRoot(c.env.workDir, c.env.home)
		}
		if root == "" {
			root = c.env.workDir
		}
		path = filepath.Join(root, ".claude", "settings.json")
	}
	if !*write {
		b, _ := json.MarshalIndent(hook.Settings(command, deny), "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
		fmt.Fprintf(c.stderr, "harness: merge this into %s, or run harness hook install --write\n", path)
		return exitOK
	}
	changed, err := hook.Install(path, command, deny)
	if err != nil {
		return c.fail("hook install: %v", err)
	}
	if !changed {
		fmt.Fprintf(c.stdout, "%s already runs the harness hook, with its permission rules\n", path)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "installed the harness hook (PreToolUse, PostToolUse) and its permission rules (permissions.deny) in %s\n", path)
	return exitOK
}
