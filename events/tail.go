package events

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/agentharness/harness/internal/flock"
)

// Follow calls f for every line of the log (its rotated files, oldest
// first, then the current file) and then, until ctx ends, for every line
// appended to it. It follows rotations, however many happen between two
// polls: catching up, it holds a shared lock on the writers' lock file, so
// no file changes its name meanwhile.
func Follow(ctx context.Context, path string, maxFiles int, poll time.Duration, f func(line []byte) error) error {
	var cur *os.File
	var r *bufio.Reader
	var partial []byte
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	drain := func() error {
		for {
			chunk, err := r.ReadBytes('\n')
			partial = append(partial, chunk...)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			line := partial[:len(partial)-1]
			partial = nil
			if err := f(line); err != nil {
				return err
			}
		}
	}
	// catchUp reads the rotated files newer than the one being followed
	// (all of them at the start), then opens the current file.
	catchUp := func() error {
		if lock, err := os.Open(path + ".lock"); err == nil {
			defer lock.Close()
			if err := flock.RLock(lock); err == nil {
				defer flock.Unlock(lock)
			}
		}
		var mine os.FileInfo
		if cur != nil {
			if err := drain(); err != nil {
				return err
			}
			mine, _ = cur.Stat()
			cur.Close()
			cur = nil
		}
		rotated := Files(path, maxFiles)
		if n := len(rotated); n > 0 && rotated[n-1] == path {
			rotated = rotated[:n-1]
		}
		start := 0
		if mine != nil {
			start = len(rotated) // the followed file was dropped: nothing newer is known
			for i, p := range rotated {
				if fi, err := os.Stat(p); err == nil && os.SameFile(fi, mine) {
					start = i + 1
				}
			}
		}
		for _, p := range rotated[start:] {
			if err := readFile(p, f); err != nil {
				return err
			}
		}
		file, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		cur, r, partial = file, bufio.NewReaderSize(file, 64<<10), nil
		return nil
	}
	if err := catchUp(); err != nil {
		return err
	}
	for {
		if cur == nil {
			if err := catchUp(); err != nil {
				return err
			}
		}
		if cur != nil {
			if err := drain(); err != nil {
				return err
			}
			onDisk, err1 := os.Stat(path)
			mine, err2 := cur.Stat()
			if err1 != nil || err2 != nil || !os.SameFile(onDisk, mine) {
				if err := catchUp(); err != nil { // rotated away
					return err
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}
