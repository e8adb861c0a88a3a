package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nonblocking reports whether f's open file is in non-blocking mode.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := raw.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	return flags&unix.O_NONBLOCK != 0
}

// blockingPipe is a pipe whose read end is as a process's stdin is: in
// blocking mode, not a file of the runtime's poller (os.Pipe's ends are).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// twin reports whether the process has an open file of its own, other
// than f's descriptor, on the pipe f reads, open for reading and
// non-blocking: the file pollable opens.
func twin(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn() // not f.Fd(), which would make f blocking
	if err != nil {
		t.Fatal(err)
	}
	caller := -1
	var st unix.Stat_t
	var serr error
	raw.Control(func(fd uintptr) { caller, serr = int(fd), unix.Fstat(int(fd), &st) })
	if serr != nil {
		t.Fatal(serr)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd == caller {
			continue
		}
		var other unix.Stat_t
		if unix.Fstat(fd, &other) != nil || other.Dev != st.Dev || other.Ino != st.Ino {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil &&
			flags&unix.O_ACCMODE == unix.O_RDONLY && flags&unix.O_NONBLOCK != 0 {
			return true
		}
	}
	return false
}

// ServeStdio reads a blocking pipe (a process's stdin) through the
// runtime's poller while it serves, by a non-blocking file of its own on
// the pipe, and leaves the caller's file as it found it: in blocking mode
// and open, whether the agent hung up or the serving was cancelled. After
// a cancel, what the client sends is the caller's to read, not taken by a
// reader left behind. A pipe of the poller already, or a reader that is no
// file, is read as it is.
func TestStdinIsReadThroughThePoller(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) (r io.Reader, w io.WriteCloser, file *os.File)
		// blocking: the caller's file, before, while served and after;
		// twin: a non-blocking file of the serving's own reads the pipe.
		blocking, twin bool
		cancel         bool // serving ends by its context, not by the agent hanging up
	}{
		{name: "a blocking pipe, the agent hangs up", blocking: true, twin: true,
			in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) { r, w := blockingPipe(t); return r, w, r }},
		{name: "a blocking pipe, serving cancelled", blocking: true, twin: true, cancel: true,
			in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) { r, w := blockingPipe(t); return r, w, r }},
		{name: "a pipe of the poller",
			in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close(); w.Close() })
				return r, w, r
			}},
		{name: "no file", in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) { r, w := io.Pipe(); return r, w, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, send, file := tc.in(t)
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- f.g.ServeStdio(ctx, agentSession("poll-"+tc.name), in, outW); outW.Close() }()
			lines := bufio.NewScanner(outR)
			for i := range 3 { // answered, one after another
				if _, err := send.Write(append(requestMessage(int64(i+1), "ping", nil), '\n')); err != nil {
					t.Fatal(err)
				}
				if !lines.Scan() {
					t.Fatalf("no answer to ping %d: %v", i+1, lines.Err())
				}
				if m, err := parseMessage(lines.Bytes()); err != nil || !m.isResponse() || m.Error != nil {
					t.Fatalf("ping %d: %s (%v)", i+1, lines.Bytes(), err)
				}
				if file != nil {
					if got := !nonblocking(t, file); got != tc.blocking {
						t.Errorf("while served: the caller's file blocking %v, want %v", got, tc.blocking)
					}
					if got := twin(t, file); got != tc.twin {
						t.Errorf("while served: read through a non-blocking file of its own %v, want %v", got, tc.twin)
					}
				}
			}
			go func() {
				for lines.Scan() {
				}
			}()
			if tc.cancel {
				cancel() // the reader is parked in the poller, or blocked in read(2)
			} else {
				send.Close()
			}
			select {
			case err := <-served:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("ServeStdio: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("ServeStdio did not return")
			}
			if file == nil {
				return
			}
			if got := !nonblocking(t, file); got != tc.blocking {
				t.Errorf("after serving: the caller's file blocking %v, want %v", got, tc.blocking)
			}
			if twin(t, file) {
				t.Error("after serving: the serving's own file of the pipe is still open")
			}
			if _, err := file.Stat(); err != nil {
				t.Errorf("the caller's descriptor was closed: %v", err)
			}
			if !tc.cancel {
				return
			}
			if _, err := send.Write([]byte("after\n")); err != nil {
				t.Fatal(err)
			}
			read := make(chan string, 1)
			go func() {
				buf := make([]byte, 6)
				n, err := io.ReadFull(file, buf)
				if err != nil {
					read <- err.Error()
				}
				read <- string(buf[:n])
			}()
			select {
			case got := <-read:
				if got != "after\n" {
					t.Errorf("reading the caller's descriptor after: %q", got)
				}
			case <-time.After(10 * time.Second):
				t.Error("what the client sent after serving was not there to read: a reader of the serving took it")
			}
		})
	}
}

// A client that gives the gateway one socket as both its stdin and its
// stdout (inetd, socat EXEC:) gets every answer, however far behind it
// reads: the socket stays blocking, so an answer that does not fit waits
// rather than being lost. Buffers are made small, so that the answers
// fill them while the client is still sending.
func TestStdinAndStdoutOneSocket(t *testing.T) {
	f := newFixture(t, nil)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range pair {
		for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, 4096); err != nil {
				t.Fatal(err)
			}
		}
	}
	gw, client := os.NewFile(uintptr(pair[0]), "stdio"), os.NewFile(uintptr(pair[1]), "client")
	t.Cleanup(func() { client.Close() })
	served := make(chan error, 1)
	go func() {
		served <- f.g.ServeStdio(context.Background(), agentSession("one-socket"), gw, gw)
		gw.Close() // the client reads to the end
	}()
	const n = 500 // answers of about 40 bytes, each written on its own: many times the buffers
	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(client)
		for i := range n {
			w.Write(append(requestMessage(int64(i+1), "ping", nil), '\n'))
		}
		err := w.Flush()
		if err == nil {
			err = unix.Shutdown(int(client.Fd()), unix.SHUT_WR) // the agent is done sending
		}
		sent <- err
	}()
	if err := <-sent; err != nil { // every request read while no answer was
		t.Fatal(err)
	}
	got := map[string]bool{}
	lines := bufio.NewScanner(client)
	for lines.Scan() {
		m, err := parseMessage(lines.Bytes())
		if err != nil || !m.isResponse() || m.Error != nil {
			t.Fatalf("not an answer: %s (%v)", lines.Bytes(), err)
		}
		got[idKey(m.ID)] = true
	}
	if len(got) != n {
		t.Errorf("%d answers of %d pings", len(got), n)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}
