package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/agentharness/harness/events"
)

// InstallationFile is the file, in the state directory, that holds the
// installation's id: the id of every decision-log entry's labels (OPA
// puts its instance's there), the same for every process of the
// installation (the CLI, each hook call, the daemon, the gateway).
const InstallationFile = "installation-id"

var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// InstallationID returns the id of the installation whose state directory
// is dir, creating it the first time (a UUIDv7 in a 0600 file; the
// directory 0700). The file is read as a regular file only, never through
// a link, and of it at most one line: one that is not an id, a link, a
// FIFO or a device is replaced by a new id.
func InstallationID(dir string) (string, error) {
	path := filepath.Join(dir, InstallationFile)
	if id, err := readID(path); err == nil {
		return id, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// The id is written whole into a file of its own, then linked into
	// place: a process never reads a half-written id, and of processes
	// that start at once, the first link wins and the others read it.
	id := events.NewID(time.Now())
	tmp, err := os.CreateTemp(dir, "."+InstallationFile+".tmp*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return id, nil
	case !errors.Is(err, fs.ErrExist):
		return "", err
	}
	if got, err := readID(path); err == nil {
		return got, nil // another process made it first
	}
	// What is there is no id (or a link, a FIFO): replace it.
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return id, nil
}

// readID reads the id of the file at path: a regular file, not a link,
// holding an id and a newline.
func readID(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return "", err
	}
	id := string(bytes.TrimSuffix(b, []byte("\n")))
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("%s holds no installation id", path)
	}
	return id, nil
}
