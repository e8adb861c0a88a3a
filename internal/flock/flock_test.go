package flock

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// open opens path, another open file of it each time.
func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Lock takes a free lock at once, waits for a held one until its holder
// lets go, and excludes others while it holds it; Unlock lets go.
func TestLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool // by another open file when Lock is called
	}{
		{"free", false},
		{"held", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lock")
			holder, f := open(t, path), open(t, path)
			if tc.held {
				if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
					t.Fatal(err)
				}
			}
			locked := make(chan error, 1)
			go func() { locked <- Lock(f) }()
			if tc.held {
				select {
				case err := <-locked:
					t.Fatalf("Lock returned (%v) while another held the lock", err)
				case <-time.After(50 * time.Millisecond): // a span in which it must not return, not a synchronisation
				}
				syscall.Flock(int(holder.Fd()), syscall.LOCK_UN)
			}
			if err := <-locked; err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
				t.Fatalf("another took the lock Lock holds: %v", err)
			}
			if err := Unlock(f); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatalf("the lock is still held after Unlock: %v", err)
			}
		})
	}
}

// While another holds the lock, Lock waits in the runtime's timers, not
// in a blocking flock(2), which would keep its goroutine in a system call
// for as long as the holder likes (see the package's doc).
func TestLockWaitsOutsideTheKernel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	holder, f := open(t, path), open(t, path)
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- Lock(f) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 2)
		sleeping := false
		for _, g := range strings.Split(b.String(), "\n\n") {
			if strings.Contains(g, "flock.Lock") && strings.HasPrefix(g, "goroutine ") && strings.Contains(g, "[sleep") {
				sleeping = true
			}
		}
		if sleeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Lock never waited in a timer:\n%s", b.String())
		}
	}
	syscall.Flock(int(holder.Fd()), syscall.LOCK_UN)
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
}
