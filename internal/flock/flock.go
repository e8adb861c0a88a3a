// Package flock takes whole-file locks (flock(2)) without waiting for them
// in the kernel.
//
// A lock another process holds is waited for in the runtime's timers, by
// trying again with a growing pause, not in a blocking flock(2): on Go
// 1.26 a goroutine that enters a system call just as the runtime stops
// the world can hold that stop, and every goroutine of the process, until
// the call returns. A blocking flock returns when the holder lets go, and
// the holder may be anyone who can open the file, an agent's shell among
// them.
package flock

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Pauses between tries: short at first (a lock held for a write), then up
// to maxPause (a lock held by a slow or hostile holder costs a try a
// pause, not a core).
const (
	firstPause = 50 * time.Microsecond
	maxPause   = 10 * time.Millisecond
)

// Lock takes the exclusive lock of f, waiting while another open file
// holds a lock of it.
func Lock(f *os.File) error { return take(f, syscall.LOCK_EX) }

// RLock takes a shared lock of f, waiting while another open file holds
// its exclusive lock.
func RLock(f *os.File) error { return take(f, syscall.LOCK_SH) }

// take takes the lock how (LOCK_EX or LOCK_SH) of f.
func take(f *os.File, how int) error {
	pause := firstPause
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}

// Unlock lets go of f's lock.
func Unlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
