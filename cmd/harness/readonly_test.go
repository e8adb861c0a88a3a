package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshot is every file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		content := "(directory)"
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			content = string(b)
		}
		files[strings.TrimPrefix(path, dir)] = content
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The commands that show what the ledger and the logs hold never write:
// in a fresh home they create no ledger, no state directory and no log;
// with a ledger, no session and no line. A reset of a session the ledger
// does not have is an error, and writes nothing either.
func TestReadingWritesNothing(t *testing.T) {
	t.Parallel()
	reads := []struct {
		args []string
		code int // in a fresh home
	}{
		{[]string{"budget", "--session", "s-1"}, 1},
		{[]string{"budget", "--session", "s-1", "--json"}, 1},
		{[]string{"budget", "reset", "--session", "s-1"}, 1},
		{[]string{"role", "--session", "s-1"}, 1},
		{[]string{"sessions"}, 0},
		{[]string{"sessions", "--session", "s-1", "--json"}, 0},
		{[]string{"events"}, 0},
		{[]string{"events", "--json", "--session", "s-1"}, 0},
		{[]string{"log"}, 0},
		{[]string{"log", "--json", "--session", "s-1"}, 0},
	}
	t.Run("fresh home", func(t *testing.T) {
		t.Parallel()
		for _, r := range reads {
			home := t.TempDir()
			out, errOut, code := harnessIn(t, home, nil, r.args...)
			if code != r.code {
				t.Errorf("harness %s: exit %d, want %d\n%s%s", strings.Join(r.args, " "), code, r.code, out, errOut)
			}
			if files := snapshot(t, home); len(files) > 0 {
				t.Errorf("harness %s wrote %v", strings.Join(r.args, " "), slicesOf(files))
			}
		}
	})
	t.Run("with a ledger", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		if _, errOut, code := harnessIn(t, home, nil, "decide", "--tool", "ctx_shell", "--session", "s-1", "--agent", "a", "--record"); code != 0 {
			t.Fatalf("decide: exit %d\n%s", code, errOut)
		}
		before := snapshot(t, home)
		for _, r := range reads {
			if len(r.args) > 1 && r.args[1] == "reset" {
				r.args = []string{"budget", "reset", "--session", "ghost"}
			}
			harnessIn(t, home, nil, r.args...)
			harnessIn(t, home, nil, append(r.args, "--agent", "b")...) // a session the ledger does not have
			if after := snapshot(t, home); !maps.Equal(before, after) {
				t.Errorf("harness %s changed the state directory: %v → %v", strings.Join(r.args, " "), slicesOf(before), slicesOf(after))
				before = after
			}
		}
	})
}

// slicesOf names the files of a snapshot, sorted.
func slicesOf(files map[string]string) []string {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
