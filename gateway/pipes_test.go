package gateway

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pipeBuffer is the buffer of the pipe f is an end of.
func pipeBuffer(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	size, ferr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) { size, ferr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatalf("F_GETPIPE_SZ: %v", ferr)
	}
	return size
}

// setPipeBuffer sets the buffer of f's pipe to size.
func setPipeBuffer(t *testing.T, f *os.File, size int) {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	raw.Control(func(fd uintptr) { _, ferr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
	if ferr != nil {
		t.Fatalf("F_SETPIPE_SZ %d: %v", size, ferr)
	}
}

func TestWiden(t *testing.T) {
	for _, tc := range []struct {
		name         string
		before, want int // 0: as the kernel makes a pipe
		end          string
	}{
		{name: "a new pipe, by its read end", want: pipeSize, end: "r"},
		{name: "a new pipe, by its write end", want: pipeSize, end: "w"},
		{name: "a smaller pipe", before: 4096, want: pipeSize, end: "r"},
		{name: "a pipe its maker made larger is not shrunk", before: 1 << 20, want: 1 << 20, end: "w"},
		{name: "a pipe as large", before: pipeSize, want: pipeSize, end: "r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			if tc.before > 0 {
				setPipeBuffer(t, r, tc.before)
			} else if got := pipeBuffer(t, r); got >= pipeSize {
				t.Fatalf("a new pipe holds %d bytes already: the test shows nothing", got)
			}
			end := r
			if tc.end == "w" {
				end = w
			}
			widen(end)
			if got := pipeBuffer(t, r); got != tc.want {
				t.Errorf("the pipe holds %d bytes, want %d", got, tc.want)
			}
			// Still a pipe that carries what is written to it.
			if _, err := w.Write([]byte("line\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "line\n" {
				t.Fatalf("read %q, %v", line, err)
			}
		})
	}
	t.Run("what is not a pipe is left as it is", func(t *testing.T) {
		dir := t.TempDir()
		file, err := os.Create(filepath.Join(dir, "file"))
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		socket, peer := os.NewFile(uintptr(fds[0]), "socket"), os.NewFile(uintptr(fds[1]), "peer")
		defer socket.Close()
		defer peer.Close()
		for _, f := range []*os.File{file, null, socket} {
			widen(f)
			raw, err := f.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var ferr error
			raw.Control(func(fd uintptr) { _, ferr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
			if ferr == nil {
				t.Errorf("%s has a pipe's buffer after widen", f.Name())
			}
		}
		if _, err := file.WriteString("still written\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := socket.Write([]byte("x")); err != nil {
			t.Fatalf("the socket after widen: %v", err)
		}
		widen(struct{ io.Writer }{file}) // not an *os.File
		pr, pw := io.Pipe()
		widen(pr)
		pr.Close()
		pw.Close()
		widen(nil)
		widen((*os.File)(nil))
		closed, err := os.Open(filepath.Join(dir, "file"))
		if err != nil {
			t.Fatal(err)
		}
		closed.Close()
		widen(closed)
	})
	t.Run("a named pipe is a pipe", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		widen(f)
		if got := pipeBuffer(t, f); got != pipeSize {
			t.Errorf("the named pipe holds %d bytes, want %d", got, pipeSize)
		}
	})
}

// TestResultPipesAreWide: the pipes a result crosses, from the upstream
// to the gateway and from the gateway to its client, hold pipeSize once
// a session is served; the client's pipe that the gateway reads too.
func TestResultPipesAreWide(t *testing.T) {
	f := newFixture(t, nil)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- f.g.ServeStdio(ctx, agentSession("wide-pipes"), inR, outW); outW.Close() }()
	lines := bufio.NewReader(outR)
	send := func(m []byte) {
		t.Helper()
		if _, err := inW.Write(append(m, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(requestMessage(1, "initialize", []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)))
	send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	send(requestMessage(2, "tools/call", []byte(`{"name":"ctx_read","arguments":{"bytes":10}}`)))
	for id := 1; id <= 2; id++ {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			t.Fatalf("answer %d: %v", id, err)
		}
		if m, err := parseMessage(line); err != nil || !m.isResponse() {
			t.Fatalf("answer %d: %s (%v)", id, line, err)
		}
	}
	if got := pipeBuffer(t, outR); got != pipeSize {
		t.Errorf("the pipe to the client holds %d bytes, want %d", got, pipeSize)
	}
	if got := pipeBuffer(t, inW); got != pipeSize {
		t.Errorf("the pipe from the client holds %d bytes, want %d", got, pipeSize)
	}
	pids := f.upstreamPids(t)
	if len(pids) == 0 {
		t.Fatal("no upstream process")
	}
	for _, pid := range pids {
		stdout, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fd/1") // the same pipe, the upstream's end of it
		if err != nil {
			t.Fatal(err)
		}
		got := pipeBuffer(t, stdout)
		stdout.Close()
		if got != pipeSize {
			t.Errorf("the upstream's stdout (process %d) holds %d bytes, want %d", pid, got, pipeSize)
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// upstreamPids are the processes of the fixture's upstream that this test
// process started.
func (f *fixture) upstreamPids(t *testing.T) []int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.EvalSymlinks(upstreamBin)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended
		}
		for _, field := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				t.Fatalf("%s: %q", task, b)
			}
			if exe, err := os.Readlink("/proc/" + field + "/exe"); err == nil && exe == bin {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
