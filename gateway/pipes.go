package gateway

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pipeSize is the buffer the gateway asks of the pipes a result crosses:
// the upstream's stdout and, when they are pipes, the gateway's own stdin
// and stdout.
//
// A pipe holds 64 KiB unless asked for more. A result larger than that
// crosses it in turns: its writer blocks until the reader has drained the
// pipe, and each side waits to be woken for the other, twice over through
// the gateway. With 256 KiB a result of 100 KB crosses each pipe in one
// write and one read (0.15–0.2 ms of a 100 KB call on this project's
// machines). The kernel counts a pipe's buffer against its user's allowance
// of pipe memory (/proc/sys/fs/pipe-user-pages-soft, 64 MiB by default),
// and allocates its pages only as they are written: three pipes of 256 KiB
// a gateway leave that allowance to the user's other programs.
const pipeSize = 256 << 10

// widen asks the kernel for a buffer of pipeSize for f, when f is an
// *os.File of a pipe whose buffer is smaller. It never shrinks a pipe that
// a client made larger, and a refusal (a user past the allowance, a kernel
// without F_SETPIPE_SZ) leaves the pipe as it was: only slower.
func widen(f any) {
	_, raw, ok := pipeFile(f)
	if !ok {
		return // a terminal, a file or a socket
	}
	raw.Control(func(fd uintptr) {
		if size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && size < pipeSize {
			unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
		}
	})
}

// pipeFile is x as an *os.File of a pipe (anonymous or named), and its
// descriptor's raw connection; ok is false for anything else: what is not
// an *os.File, a terminal, a regular file, a socket, a closed file.
func pipeFile(x any) (f *os.File, raw syscall.RawConn, ok bool) {
	f, ok = x.(*os.File)
	if !ok {
		return nil, nil, false
	}
	if st, err := f.Stat(); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return nil, nil, false
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	return f, raw, true
}
