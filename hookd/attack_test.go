package hookd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentharness/harness/app"
)

// The daemon fingerprints the project's .lean-ctx files on every call,
// under the project's lock, and the agent writes them: a FIFO, or a link
// to a device that never ends, must not hold the fingerprint, or every
// call of the project waits for the lock until it is refused (and a
// PostToolUse charged nothing) for as long as the agent likes. A load
// reads neither (it refuses what is not a regular file).
func TestAttackFingerprintDoesNotBlock(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		make func(t *testing.T, s sources) (unblock func())
	}{
		{"a FIFO as the project's harness.toml", func(t *testing.T, s sources) func() {
			return fifo(t, filepath.Join(s.dir, "project/harness.toml"))
		}},
		{"a FIFO in the roles directory", func(t *testing.T, s sources) func() {
			return fifo(t, filepath.Join(s.dir, "project/roles/zz.toml"))
		}},
		{"a link to /dev/zero in the roles directory", func(t *testing.T, s sources) func() {
			if err := os.Symlink("/dev/zero", filepath.Join(s.dir, "project/roles/zz.toml")); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSources(t)
			unblock := tt.make(t, s)
			done := make(chan string, 1)
			go func() { done <- Fingerprint(s.paths) }()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Errorf("the fingerprint has not returned after 3 s")
				unblock()
			}
		})
	}
}

// fifo makes a FIFO at path, and returns what lets a reader blocked on it
// go.
func fifo(t *testing.T, path string) func() {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

// Any program of the user's can reach the daemon's socket: a request that
// streams without end is refused at the bound of a hook payload (the
// connection closed), not read into memory until the call's deadline.
func TestAttackARequestWithoutEnd(t *testing.T) {
	t.Parallel()
	sock, _ := serve(t, Options{})
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(`{"payload":"`)); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	sent := 0
	for ; sent < 2*maxRequest; sent += len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			break // the daemon closed the connection
		}
	}
	if sent >= 2*maxRequest {
		t.Errorf("the daemon read %d MiB of one request, twice its bound, and kept reading", sent>>20)
	}
}

// Each project (with its layers and the hook's environment) the daemon
// answers for is a load it keeps: a policy engine, a ledger's connection,
// logs. A daemon that lives for weeks, or a user's program that sends
// calls for a new directory each time, must not grow it without bound:
// the daemon keeps the most recently used loads, closes the others, and
// loads an evicted project again at its next call, deciding as before.
func TestAttackManyProjectsGrowTheDaemon(t *testing.T) {
	t.Parallel()
	const keep = 3
	d := &daemon{o: Options{Timeout: time.Minute, MaxLoads: keep}, loads: map[string]*project{}}
	t.Cleanup(d.close)
	ctx := context.Background()
	worlds := make([]world, 2*keep+1)
	for i := range worlds {
		worlds[i] = newWorld(t)
		if got := decision(t, d.answer(ctx, worlds[i].request(t, "PreToolUse", fmt.Sprint("s", i)))); got != "" {
			t.Fatalf("world %d: decision %q, want none (allowed)", i, got)
		}
		if n := d.loaded(); n > keep {
			t.Errorf("after %d projects the daemon keeps %d loads, want at most %d", i+1, n, keep)
		}
	}
	// The first world was evicted long ago: its next call loads it again,
	// and its rules still decide (a narrower role now refuses the call).
	worlds[0].role(t, "[role]\ninherits = \"reviewer\"\n")
	if got := decision(t, d.answer(ctx, worlds[0].request(t, "PreToolUse", "s0"))); got != "deny" {
		t.Errorf("an evicted project's call: decision %q, want deny", got)
	}
	if n := d.loaded(); n > keep {
		t.Errorf("the daemon keeps %d loads, want at most %d", n, keep)
	}
}

// The hook believes a daemon that runs the harness binary, and an agent
// with a shell can start that binary as the daemon itself (after killing
// the one running, or before the hook starts one), with an environment of
// its choosing. The request carries what a load reads of the hook's
// environment, so the daemon's HOME or XDG_* change nothing; but it
// carried no PATH, and the harness on the PATH as a link to the binary
// (~/.local/bin/harness, with the small hook binary beside it, which an
// installed hook runs) was looked for on the daemon's own PATH. A daemon
// whose PATH leaves out the link's directory (or a first hook call from a
// project whose settings give hooks another PATH) left the link and the
// hook binary beside it unprotected for every call it answered, while the
// hook answering in its own process refused them. The daemon must answer
// as the hook would, whatever its own PATH.
func TestAttackDaemonStartedWithAnotherPath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "harness")); err != nil {
		t.Fatal(err)
	}
	hookPath := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Setenv("PATH", hookPath) // the hook's, which answers in its process (Local)

	// The agent's daemon: the harness binary, on the hook's socket, with a
	// PATH of the agent's.
	dir, err := os.MkdirTemp("", "hookd") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "hook.sock")
	cmd := exec.Command(exe, "hookd-test-daemon", socket)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "the agent's daemon to listen", func() bool {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	w := newWorld(t)
	for _, tt := range []struct {
		name, tool string
		input      map[string]any
	}{
		{"Write over the hook binary beside the link", "Write", map[string]any{"file_path": filepath.Join(bin, "harness-hook"), "content": "#!/bin/sh\n"}},
		{"Bash replacing the link", "Bash", map[string]any{"command": "ln -sf /bin/true " + filepath.Join(bin, "harness")}},
		{"Bash replacing the hook binary", "Bash", map[string]any{"command": "cp /bin/true " + filepath.Join(bin, "harness-hook")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			payload, _ := json.Marshal(map[string]any{
				"session_id": "s-" + tt.tool, "cwd": w.project, "hook_event_name": "PreToolUse",
				"tool_name": tt.tool, "tool_input": tt.input,
			})
			vars := map[string]string{"HOME": w.home, "LEAN_CTX_ROLE": "team", "XDG_STATE_HOME": filepath.Join(w.home, "state"), "PATH": hookPath}
			req := NewRequest(payload, "", app.Env{WorkDir: w.project, Home: w.home, Getenv: func(k string) string { return vars[k] }})
			if got := decision(t, Local(context.Background(), req)); got != "deny" {
				t.Fatalf("the hook in its own process: %q, want deny", got)
			}
			resp, ok := Call(socket, req)
			if !ok {
				t.Fatal("the daemon did not answer")
			}
			if got := decision(t, resp); got != "deny" {
				t.Errorf("the daemon started with another PATH: %q, want deny (stderr %q)", got, resp.Stderr)
			}
		})
	}
}
