package hookclient

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// conn is a connection to the daemon's socket on a file descriptor of its
// own, read and written with blocking system calls that the socket's
// timeouts (SO_SNDTIMEO, SO_RCVTIMEO) end at the connection's deadline.
// The package net would do the same through its poller, but linking it
// links cgo's name resolver, and a dynamically linked hook binary takes
// about a millisecond longer to start here than a static one: more than
// everything else the hook process does.
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
	if err := c.setTimeout(syscall.SO_SNDTIMEO); err != nil {
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
		if err = c.setTimeout(syscall.SO_SNDTIMEO); err != nil {
			break
		}
	}
	if err != nil {
		c.Close()
		return nil, os.NewSyscallError("connect", err)
	}
	c.deadline = deadline
	return c, nil
}

// setTimeout bounds the socket's next call of the kind of opt (SO_RCVTIMEO
// or SO_SNDTIMEO) by the deadline: it times out with what is left of it,
// or now when it has passed.
func (c *conn) setTimeout(opt int) error {
	left := time.Until(c.deadline)
	if left <= 0 {
		return errTimeout
	}
	tv := syscall.NsecToTimeval(left.Nanoseconds())
	if tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1 // zero would mean no timeout at all
	}
	if err := syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return nil
}

// Read reads, waiting no longer than the deadline: the socket's timeouts
// bound each call, not the connection, so each call gets the time left (a
// peer that sent a byte just before each timeout would keep it forever).
func (c *conn) Read(p []byte) (int, error) {
	for {
		if err := c.setTimeout(syscall.SO_RCVTIMEO); err != nil {
			return 0, err
		}
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
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
		if err := c.setTimeout(syscall.SO_SNDTIMEO); err != nil {
			return done, err
		}
		n, err := syscall.SendmsgN(c.fd, p[done:], nil, nil, syscall.MSG_NOSIGNAL)
		switch {
		case err == syscall.EINTR:
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
