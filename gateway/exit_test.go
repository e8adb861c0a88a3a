package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goroutines is this process's goroutines, each with its state and stack.
func goroutines() []string {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.Split(b.String(), "\n\n")
}

// zombie waits until process pid has exited and is not yet reaped.
func zombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d has not exited: %s", pid, st)
		}
	}
}

// awaitExit returns once the process has exited, whether it had before
// the call or does during it, and however it ended; it does not reap it,
// so cmd.Wait still tells how it ended.
func TestAwaitExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		before bool           // exited before awaitExit is called
		end    syscall.Signal // sent once awaitExit waits (0: none)
		want   string         // what cmd.Wait then says
	}{
		{"exited before", "exit 3", true, 0, "exit status 3"},
		{"exits during", "read x; exit 4", false, 0, "exit status 4"},
		{"killed during", "read x", false, syscall.SIGKILL, "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.before {
				zombie(t, cmd.Process.Pid)
			}
			done := make(chan struct{})
			go func() {
				awaitExit(cmd)
				close(done)
			}()
			if !tc.before {
				select {
				case <-done:
					t.Fatal("awaitExit returned while the process ran")
				case <-time.After(50 * time.Millisecond): // a span in which it must not return, not a synchronisation
				}
				if tc.end != 0 {
					cmd.Process.Signal(tc.end)
				} else {
					in.Write([]byte("go\n"))
				}
			}
			<-done
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", cmd.Process.Pid)); err != nil {
				t.Errorf("the process was reaped by awaitExit: %v", err)
			}
			if err := cmd.Wait(); err == nil || err.Error() != tc.want {
				t.Errorf("cmd.Wait: %v, want %s", err, tc.want)
			}
		})
	}
}

// While an upstream lives, no goroutine of the gateway waits for it in a
// system call (waitid): its exit is awaited in the poller. A goroutine
// that enters a system call just as Go 1.26's runtime stops the world can
// hold that stop, and the whole gateway, until the call returns (see
// awaitExit).
func TestUpstreamExitAwaitedInThePoller(t *testing.T) {
	c, err := dialStdio(UpstreamConfig{Command: "sh", Args: []string{"-c", "read x"}}, nil, connHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	var waiter string
	for deadline := time.Now().Add(10 * time.Second); waiter == ""; time.Sleep(time.Millisecond) {
		for _, g := range goroutines() {
			if strings.Contains(g, "os.(*Process).pidfdWait") || strings.Contains(g, "os.(*Process).blockUntilWaitable") {
				t.Fatalf("a goroutine waits for the upstream in a system call:\n%s", g)
			}
			if strings.Contains(g, "gateway.awaitExit") && strings.Contains(g, "[IO wait") {
				waiter = g
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no goroutine awaits the upstream's exit in the poller")
		}
	}
	c.close()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's exit was not seen once it was closed")
	}
}

// The fixture upstream waits for its next message parked in the poller,
// not in a blocking read of stdin: on Go 1.26 that read could hold a
// collection, and the answer it was collecting for, until the next
// message, which waits for the answer (the soak's stalled call; see
// testdata/upstream's serveStdio). Its goroutines are read from the
// profile it writes at SIGUSR1.
func TestFixtureWaitsForStdinInThePoller(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(upstreamBin)
	cmd.Env = append(os.Environ(), "UPSTREAM_STACKS="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	// An answer: the upstream serves, its stdin reader is waiting for
	// the next message (or about to).
	in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("ping: %q, %v", line, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("stacks-%d.txt", cmd.Process.Pid))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		os.Remove(path)
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		var stacks []byte
		for wrote := time.Now().Add(5 * time.Second); stacks == nil; time.Sleep(time.Millisecond) {
			stacks, _ = os.ReadFile(path)
			if stacks == nil && time.Now().After(wrote) {
				t.Fatal("the upstream wrote no stacks at SIGUSR1")
			}
		}
		var reader string
		for _, g := range strings.Split(string(stacks), "\n\n") {
			if strings.Contains(g, "readNextLine.func") && strings.Contains(g, "os.(*File).Read") {
				reader = g
			}
		}
		switch {
		case strings.Contains(reader, "[IO wait"):
			return // parked in the poller
		case strings.Contains(reader, "[syscall"):
			t.Fatalf("the upstream waits for stdin in a system call:\n%s", reader)
		case time.Now().After(deadline):
			t.Fatalf("no goroutine of the upstream waits for stdin:\n%s", stacks)
		}
	}
}
