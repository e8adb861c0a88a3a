package app

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// The installation's id is made once and read by every later call; a file
// that holds no id, a link, a FIFO are replaced by a new id (never
// followed, never waited on); the file is 0600.
func TestInstallationID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, path string)
	}{
		{"none yet", func(*testing.T, string) {}},
		{"not an id", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("not an id, and a long line of it\n"), 0o600)
		}},
		{"a link", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			os.WriteFile(target, []byte("0193a5f0-0000-7000-8000-000000000001\n"), 0o600)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			os.MkdirAll(dir, 0o700)
			path := filepath.Join(dir, InstallationFile)
			tt.prepare(t, path)
			id, err := InstallationID(dir)
			if err != nil || !idPattern.MatchString(id) {
				t.Fatalf("%q, %v", id, err)
			}
			again, err := InstallationID(dir)
			if err != nil || again != id {
				t.Errorf("a second call: %q, %v; want %q", again, err, id)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Errorf("%v %v", fi.Mode(), err)
			}
			if id == "0193a5f0-0000-7000-8000-000000000001" {
				t.Error("the id was read through a link")
			}
		})
	}
	// A directory in its place is an error, not a crash.
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, InstallationFile), 0o700)
	if _, err := InstallationID(dir); err == nil {
		t.Error("a directory was taken for the id")
	}
}

// Processes that start at once agree on one id.
func TestInstallationIDAtOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	ids := make([]string, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := InstallationID(dir)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("ids %v", ids)
		}
	}
}
