package hookd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
