package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
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

// ServeStdio reads a blocking pipe (a process's stdin) through the
// runtime's poller while it serves, and gives it back as it found it: in
// blocking mode and open, whether the agent hung up or the serving was
// cancelled. A pipe of the poller already, or a reader that is no file, is
// read as it is.
func TestStdinIsReadThroughThePoller(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) (r io.Reader, w io.WriteCloser, file *os.File)
		// polled: the open file is non-blocking while served; after: as
		// it is left when serving ends.
		polled, after bool
		cancel        bool // serving ends by its context, not by the agent hanging up
	}{
		{name: "a blocking pipe, the agent hangs up", polled: true, after: false,
			in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) { r, w := blockingPipe(t); return r, w, r }},
		{name: "a blocking pipe, serving cancelled", polled: true, after: false, cancel: true,
			in: func(t *testing.T) (io.Reader, io.WriteCloser, *os.File) { r, w := blockingPipe(t); return r, w, r }},
		{name: "a pipe of the poller", polled: true, after: true,
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
				if _, err := send.Write(requestMessage(int64(i+1), "ping", nil)); err != nil {
					t.Fatal(err)
				}
				if _, err := send.Write([]byte("\n")); err != nil {
					t.Fatal(err)
				}
				if !lines.Scan() {
					t.Fatalf("no answer to ping %d: %v", i+1, lines.Err())
				}
				if m, err := parseMessage(lines.Bytes()); err != nil || !m.isResponse() || m.Error != nil {
					t.Fatalf("ping %d: %s (%v)", i+1, lines.Bytes(), err)
				}
				if file != nil {
					if got := nonblocking(t, file); got != tc.polled {
						t.Errorf("while served: non-blocking %v, want %v", got, tc.polled)
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
			if got := nonblocking(t, file); got != tc.after {
				t.Errorf("after serving: non-blocking %v, want %v", got, tc.after)
			}
			if _, err := file.Stat(); err != nil {
				t.Errorf("the caller's descriptor was closed: %v", err)
			}
			if !tc.cancel {
				return
			}
			// Still the caller's, and readable in its own mode: what the
			// client sends after is the caller's to read, not taken by a
			// reader the serving left behind.
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
