package events

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/agentharness/harness/internal/flock"
)

// Rotation bounds a log file: when a line would take it past MaxBytes it is
// renamed to NAME.1 (NAME.1 to NAME.2, and so on), and at most MaxFiles old
// files are kept.
type Rotation struct {
	MaxBytes int64
	MaxFiles int
}

// rotationRoom is how far from its bound a file must be for a line to be
// appended without the lock.
const rotationRoom = 1 << 20

// DefaultRotation keeps 10 MiB a file and 5 old files.
var DefaultRotation = Rotation{MaxBytes: 10 << 20, MaxFiles: 5}

// File appends lines to a file that several processes may share. Each line
// is written with one write(2) on an O_APPEND descriptor, which the kernel
// appends whole, whoever else appends; rotation happens under an exclusive
// flock(2) on NAME.lock, and a writer whose file was rotated by another
// process reopens the new one. A line that the file has room for, by more
// than rotationRoom, is written without the lock (two system calls fewer a
// line, of the four); one that may take the file near its rotation takes
// the lock, as followers catching up do (see Follow).
type File struct {
	path string
	rot  Rotation
	mu   sync.Mutex // this process's writers
	lock *os.File
	f    *os.File
	// opened is f's stat when it was opened: which file it is.
	opened os.FileInfo
}

// OpenFile opens (creating it and its directory if needed) the file at path.
func OpenFile(path string, rot Rotation) (*File, error) {
	if rot.MaxBytes <= 0 {
		rot.MaxBytes = DefaultRotation.MaxBytes
	}
	if rot.MaxFiles < 0 {
		rot.MaxFiles = 0
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	return &File{path: path, rot: rot, lock: lock}, nil
}

// Path is the file's path.
func (w *File) Path() string { return w.path }

// WriteLine appends line (which must not contain a newline) and a newline.
func (w *File) WriteLine(line []byte) error {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rot.MaxFiles > 0 { // a file rotated away is kept: a line written to it as it goes is not lost
		size, err := w.current()
		if err != nil {
			return err
		}
		if size+int64(len(buf))+rotationRoom <= w.rot.MaxBytes {
			// No writer rotates a file this far from its bound: that
			// takes more than rotationRoom written by others between
			// the look and the write, lines of at most 64 KiB.
			if _, err := w.f.Write(buf); err != nil {
				return fmt.Errorf("%s: %w", w.path, err)
			}
			return nil
		}
	}
	if err := flock.Lock(w.lock); err != nil { // not in the kernel (see package flock)
		return fmt.Errorf("%s: lock: %w", w.path, err)
	}
	defer flock.Unlock(w.lock)
	size, err := w.current()
	if err != nil {
		return err
	}
	if size > 0 && size+int64(len(buf)) > w.rot.MaxBytes {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	if _, err := w.f.Write(buf); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return nil
}

// current makes w.f the file at w.path: opened if needed, reopened if
// another process rotated it away. It returns the file's size. One stat of
// the path tells both whether it is still w.f's file (which w.opened, the
// stat of w.f when it was opened, identifies) and its size.
func (w *File) current() (int64, error) {
	if w.f != nil {
		onDisk, err := os.Stat(w.path)
		if err == nil && os.SameFile(onDisk, w.opened) {
			return onDisk.Size(), nil
		}
		w.f.Close()
		w.f = nil
	}
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	w.f, w.opened = f, fi
	return fi.Size(), nil
}

// rotate shifts NAME.i to NAME.i+1, drops the oldest, and starts a new file.
func (w *File) rotate() error {
	w.f.Close()
	w.f = nil
	if w.rot.MaxFiles == 0 {
		if err := os.Remove(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		_, err := w.current()
		return err
	}
	os.Remove(w.path + "." + strconv.Itoa(w.rot.MaxFiles))
	for i := w.rot.MaxFiles - 1; i >= 1; i-- {
		if err := os.Rename(w.path+"."+strconv.Itoa(i), w.path+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		return err
	}
	_, err := w.current()
	return err
}

// Close closes the file.
func (w *File) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	return w.lock.Close()
}

// Files returns the log's files that exist, oldest first: NAME.N … NAME.1,
// NAME.
func Files(path string, maxFiles int) []string {
	var out []string
	for i := maxFiles; i >= 1; i-- {
		p := path + "." + strconv.Itoa(i)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	return out
}

// ReadLines calls f for every line of the log's files, oldest first. It
// stops at the first error f returns.
func ReadLines(path string, maxFiles int, f func(line []byte) error) error {
	for _, p := range Files(path, maxFiles) {
		if err := readFile(p, f); err != nil {
			return err
		}
	}
	return nil
}

func readFile(path string, f func([]byte) error) error {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // rotated away meanwhile
	}
	if err != nil {
		return err
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if ferr := f(line[:len(line)-1]); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
