package gateway

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pollable is in read through the runtime's poller, when in is a pipe in
// blocking mode (a process's stdin, as its client made it), and a function
// that closes what it opened; else in itself.
//
// A blocking read keeps its thread, and its goroutine's P, in the system
// call. The goroutine that the reader hands a line to waits on that P
// until the runtime takes it back or wakes another thread to steal it: on
// the 2-core machines this project is measured on, about 40 µs a request,
// every request. Read through the poller, the reader parks instead, and
// the line's goroutine runs at once.
//
// The pipe is opened again (/proc/self/fd/N), non-blocking: a new open
// file of the same pipe, so the caller's open file keeps its mode. That
// one may be shared with the process's parent, or with its stdout (a
// socket that is both, as inetd and socat make them, is why sockets are
// left as they are: a non-blocking stdout loses what it cannot write at
// once). Closing the new file ends a read of it in progress, so a
// cancelled serving leaves no reader behind. Where /proc is not, in is
// read as it is.
func pollable(in io.Reader) (io.Reader, func()) {
	f, raw, ok := pipeFile(in)
	if !ok {
		return in, func() {} // a terminal, a file or a socket: as it is
	}
	fd := -1
	raw.Control(func(caller uintptr) {
		flags, err := unix.FcntlInt(caller, unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 || flags&unix.O_ACCMODE == unix.O_WRONLY {
			return // already read through a poller (an os.Pipe), or not for reading
		}
		if d, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(caller)), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			fd = d
		}
	})
	if fd < 0 {
		return in, func() {}
	}
	polled := os.NewFile(uintptr(fd), f.Name()) // non-blocking: a file of the poller
	return polled, func() { polled.Close() }
}
