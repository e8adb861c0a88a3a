package gateway

import (
	"errors"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the process of cmd has exited, having waited in
// the runtime's poller (on a pidfd) rather than in a system call, and
// leaves the process for cmd.Wait to reap, which then returns at once.
//
// cmd.Wait alone waits in waitid(2) for the upstream's whole life. Go
// 1.26's runtime can miss a goroutine that enters a system call just as
// a stop-the-world begins (the goroutine checks for a pending stop, then
// the stop looks for goroutines in system calls once, before the first
// has marked itself as in one): the stop then waits for that system call
// to return, and every goroutine of the process with it. A call that
// returns when the upstream exits would hold the whole gateway, every
// session, for as long as that upstream lives. The soak found this stall
// in its fixture upstream, which reads each message in a blocking read:
// a garbage collection that never finished until the next message, which
// waited for the stalled answer.
//
// Where there is no pidfd (Linux before 5.3), it returns at once and
// cmd.Wait waits as before.
func awaitExit(cmd *exec.Cmd) {
	fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return // the child is not reaped before cmd.Wait, so its pid is still its own
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking: a file of the poller
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd reads as ready once its process has exited.
	raw.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(p, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err != nil || n > 0 // on an error, cmd.Wait tells
		}
	})
}
