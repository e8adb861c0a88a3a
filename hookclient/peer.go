package hookclient

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// trusted checks that the process listening at the other end of fd is
// this user's and runs program (the harness binary; "" for this very
// program): the socket's directory is the user's own (0700), but an agent
// with a shell as that user could still kill the daemon and answer on its
// socket with a program of its own that allows everything. Where the
// system cannot say who the peer is, the directory's permissions are all
// there is, and the peer is trusted.
func trusted(fd int, program string) error {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return nil // no SO_PEERCRED here
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the process on the daemon's socket is another user's (uid %d)", cred.Uid)
	}
	self := program == ""
	if self {
		exe, err := os.Executable()
		if err != nil {
			return nil
		}
		program = exe
	}
	mine, err1 := os.Stat(program)
	theirs, err2 := os.Stat("/proc/" + strconv.Itoa(int(cred.Pid)) + "/exe")
	switch {
	case err1 != nil && !self:
		return fmt.Errorf("the harness binary %s cannot be read: %v", program, err1)
	case err1 != nil || errors.Is(err2, os.ErrNotExist) && !procMounted():
		return nil // the system cannot say what the peer runs
	case err2 != nil:
		return fmt.Errorf("the program of the process on the daemon's socket cannot be read: %v", err2)
	case !os.SameFile(mine, theirs):
		return fmt.Errorf("the process on the daemon's socket runs another program than the harness (%s)", program)
	}
	return nil
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/exe")
	return err == nil
}
