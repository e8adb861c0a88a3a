// Command harness-hook is the harness's Claude Code hook, small: run as
// harness-hook claude-code [--project DIR], it answers one hook call as
// harness hook claude-code does, byte for byte, but links none of the
// policy engine, the MCP library or the tokenizer, so that it starts in a
// fraction of the harness's time. It hands the payload to the hook daemon
// when one runs the harness binary beside it (else the one on the PATH);
// when none does, or HARNESS_HOOK_DAEMON=off, it runs that harness binary
// as harness hook claude-code with the same payload and arguments, which
// answers and starts the daemon for the next calls. With no harness to
// run, it refuses the call. Either way it answers within the hook's
// deadline.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentharness/harness/hookclient"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// wrongCommandLine is the refusal of a hook installed with a command line
// this binary does not read (harness hook claude-code's own).
const wrongCommandLine = "harness hook: refusing the call: the hook's command line is wrong (reinstall it: harness hook install)"

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Claude Code lets a tool run when its hook exits with anything but
	// 2: a hook installed with a bad command line must refuse, not pass.
	if len(args) == 0 || args[0] != "claude-code" {
		fmt.Fprintln(stderr, wrongCommandLine)
		return hookclient.ExitRefused
	}
	flags := args[1:]
	// Told to stop while the daemon decides, the process answers anyway
	// (a hook that died lets the tool run). Ignoring the signals costs
	// nothing; catching them starts the runtime's signal loop, a fifth of
	// a millisecond here, which only a call answered in the process needs
	// (see local).
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	c := hookclient.Client{Env: hookclient.Env{WorkDir: wd, Home: home, Getenv: os.Getenv}}
	if v := os.Getenv("HARNESS_HOOK_DEADLINE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			c.Warning = fmt.Sprintf("harness hook: warning: HARNESS_HOOK_DEADLINE=%q is not a duration; the deadline is %v\n", v, hookclient.Deadline)
		}
		c.Deadline = d
	}
	self, _ := os.Executable()
	harness, err := hookclient.FindHarness(self, os.Getenv("PATH"))
	if err != nil {
		c.Local = func(_ context.Context, req hookclient.Request) hookclient.Response {
			return hookclient.Failure(req.Payload, err)
		}
	} else {
		c.Local = local(hookclient.Delegate(harness, flags))
		// Flags other than --project are the harness's to read: it
		// answers those calls itself.
		if project, ok := projectFlag(flags); ok && os.Getenv("HARNESS_HOOK_DAEMON") != "off" {
			c.Project, c.Socket, c.Program = project, hookclient.SocketPath(c.Env), harness
		}
	}
	resp := c.Answer(context.Background(), stdin)
	stdout.Write(resp.Stdout)
	io.WriteString(stderr, resp.Stderr)
	return resp.Exit
}

// local runs the harness as answer does, and tells it to stop (SIGTERM)
// when this process is told to; then the signals are ignored again, until
// the answer is printed.
func local(answer func(context.Context, hookclient.Request) hookclient.Response) func(context.Context, hookclient.Request) hookclient.Response {
	return func(ctx context.Context, req hookclient.Request) hookclient.Response {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer signal.Ignore(os.Interrupt, syscall.SIGTERM)
		defer stop()
		return answer(ctx, req)
	}
}

// projectFlag is the project root of the hook's flags, and whether they
// are that flag only, once at most (--project DIR or --project=DIR), as
// the harness reads it.
func projectFlag(flags []string) (string, bool) {
	switch {
	case len(flags) == 0:
		return "", true
	case len(flags) == 1 && strings.HasPrefix(flags[0], "--project="):
		return strings.TrimPrefix(flags[0], "--project="), true
	case len(flags) == 2 && flags[0] == "--project" && !strings.HasPrefix(flags[1], "-"):
		return flags[1], true
	}
	return "", false
}
