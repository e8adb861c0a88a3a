package gateway

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// pollable is in read through the runtime's poller, when in is a pipe or
// a socket that is in blocking mode (a process's stdin, as its client
// made it), and a function that undoes it; else in itself.
//
// A blocking read keeps its thread, and its goroutine's P, in the system
// call. The goroutine that the reader hands a line to waits on that P
// until the runtime takes it back or wakes another thread to steal it: on
// the 2-core machines this project is measured on, about 40 µs a request,
// every request. Read through the poller, the reader parks instead, and
// the line's goroutine runs at once.
//
// The switch is made on a duplicate of the descriptor, which alone is
// closed (ending a read in progress), so in and its descriptor stay the
// caller's. O_NONBLOCK belongs to the open file, which the duplicate
// shares with in: undo puts it back to blocking, after the duplicate is
// closed and no read of it is under way.
func pollable(in io.Reader) (io.Reader, func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	if st, err := f.Stat(); err != nil || st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) == 0 {
		return in, func() {} // a terminal or a file: as it is
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return in, func() {}
	}
	dup := -1
	raw.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			return // already read through a poller (an os.Pipe), or someone else's choice
		}
		if d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			dup = d
		}
	})
	if dup < 0 {
		return in, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return in, func() {}
	}
	polled := os.NewFile(uintptr(dup), f.Name()) // non-blocking: a file of the poller
	return polled, func() {
		polled.Close() // a parked read ends; Close waits for a read under way
		raw.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
	}
}
