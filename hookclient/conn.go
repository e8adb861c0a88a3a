package hookclient

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// conn is a connection to the daemon's socket on a file descriptor of its
// own, read and written with blocking system calls whose timeouts the
// socket keeps (SO_SNDTIMEO, SO_RCVTIMEO). The package net would do the
// same through its poller, but linking it links cgo's name resolver, and
// a dynamically linked hook binary takes about a millisecond longer to
// start here than a static one: more than everything else the hook
// process does.
type conn struct {
	fd       int
	deadline time.Time
}

// errTimeout is a read or write that outlasted the connection's deadline.
var errTimeout = errors.New("i/o timeout")

// dialUnix connects to the unix socket at path, waiting at most timeout
// for the daemon to take the connection; every read and write after that
// ends by deadline.
func dialUnix(path string, timeout time.Duration, deadline time.Time) (*conn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	c := &conn{fd: fd, deadline: time.Now().Add(timeout)}
	// A unix socket's connect waits, when the listener's queue is full,
	// as long as a send would.
	if err := c.setTimeouts(); err != nil {
		c.Close()
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err == syscall.EISCONN {
			err = nil
		}
		if err != syscall.EINTR {
			break
		}
		if err = c.again(); err != nil {
			break
		}
	}
	if err != nil {
		c.Close()
		return nil, os.NewSyscallError("connect", err)
	}
	c.deadline = deadline
	if err := c.setTimeouts(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// setTimeouts bounds the socket's reads and writes by the deadline.
func (c *conn) setTimeouts() error {
	left := time.Until(c.deadline)
	if left <= 0 {
		return errTimeout
	}
	tv := syscall.NsecToTimeval(left.Nanoseconds())
	if tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1 // zero would mean no timeout at all
	}
	for _, opt := range []int{syscall.SO_SNDTIMEO, syscall.SO_RCVTIMEO} {
		if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
	}
	return nil
}

// again is whether a call interrupted by a signal may be made again: when
// the deadline has not passed, with the time left.
func (c *conn) again() error {
	if time.Now().After(c.deadline) {
		return errTimeout
	}
	return c.setTimeouts()
}

func (c *conn) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
			if err := c.again(); err != nil {
				return 0, err
			}
			continue
		case err == syscall.EAGAIN:
			return 0, errTimeout
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p. A daemon that went away is an error (EPIPE),
// never a signal: MSG_NOSIGNAL.
func (c *conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.SendmsgN(c.fd, p[done:], nil, nil, syscall.MSG_NOSIGNAL)
		switch {
		case err == syscall.EINTR:
			if err := c.again(); err != nil {
				return done, err
			}
			continue
		case err == syscall.EAGAIN:
			return done, errTimeout
		case err != nil:
			return done, os.NewSyscallError("write", err)
		}
		done += n
	}
	return done, nil
}

func (c *conn) Close() error { return syscall.Close(c.fd) }
