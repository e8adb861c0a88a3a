package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/agentharness/harness/hookclient"
)

// The hook's flags are read here only when they are --project alone, as
// the harness reads it; anything else is the harness's to read.
func TestProjectFlag(t *testing.T) {
	for _, tt := range []struct {
		flags   []string
		project string
		ours    bool
	}{
		{nil, "", true},
		{[]string{"--project", "/p"}, "/p", true},
		{[]string{"--project=/p"}, "/p", true},
		{[]string{"--project="}, "", true},
		{[]string{"--project", "--json"}, "", false},
		{[]string{"--project"}, "", false},
		{[]string{"--project", "/p", "--project", "/q"}, "", false},
		{[]string{"--bogus"}, "", false},
		{[]string{"extra"}, "", false},
		{[]string{"-p", "/p"}, "", false},
	} {
		project, ours := projectFlag(tt.flags)
		if project != tt.project || ours != tt.ours {
			t.Errorf("projectFlag(%q) = %q, %v; want %q, %v", tt.flags, project, ours, tt.project, tt.ours)
		}
	}
}

// A command line other than claude-code is refused, as the harness
// refuses a hook installed with a wrong one: Claude Code lets a tool run
// on any other exit code than 2.
func TestWrongCommandLine(t *testing.T) {
	for _, args := range [][]string{nil, {"codex"}, {"--project", "/p", "claude-code"}} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader("{}"), &out, &errb); code != 2 || out.Len() != 0 || errb.String() != wrongCommandLine+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// A call answered in the process hears of the process being told to stop
// (Delegate then tells the harness it runs): local's context ends on
// SIGTERM and on an interrupt; once it has answered, both are ignored
// again until the process has printed the answer.
func TestLocalHearsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		answer := local(func(ctx context.Context, _ hookclient.Request) hookclient.Response {
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			<-ctx.Done()
			return hookclient.Response{Stderr: "stopped"}
		})
		if r := answer(context.Background(), hookclient.Request{}); r.Stderr != "stopped" {
			t.Errorf("%v: %+v", sig, r)
		}
		if !signal.Ignored(syscall.SIGTERM) || !signal.Ignored(syscall.SIGINT) {
			t.Errorf("after %v, SIGTERM ignored: %v, SIGINT ignored: %v", sig, signal.Ignored(syscall.SIGTERM), signal.Ignored(syscall.SIGINT))
		}
	}
}
