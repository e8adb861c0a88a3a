package hookd

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sources is a world of the files a load reads, as the daemon
// fingerprints them: role and policy directories, configuration files,
// some of them missing.
type sources struct {
	dir   string
	paths []string
}

func newSources(tb testing.TB) sources {
	tb.Helper()
	s := sources{dir: tb.TempDir()}
	files := map[string]string{
		"project/roles/team.toml":               "[role]\ninherits = \"coder\"\n\n[limits]\nmax_shell_invocations = 10\n",
		"project/roles/auditor.toml":            "[role]\ninherits = \"reviewer\"\nshell_policy = \"deny\"\n",
		"user/roles/reviewer.toml":              "[role]\ninherits = \"reviewer\"\n\n[limits]\nmax_context_tokens = 50000\n",
		"project/policies/shell.rego":           "package harness.custom.shell\n\ndeny contains \"no\" if input.arguments.command == \"rm -rf /\"\n",
		"project/policies/shell_test.rego":      "package harness.custom.shell_test\n\ntest_ok if true\n",
		"user/policies/edits.rego":              "package harness.custom.edits\n\ndeny contains \"no\" if input.tool == \"ctx_edit\"\n",
		"user/harness.toml":                     "[enforcement]\ndefault_role = \"coder\"\n\n[hook]\nallow = \"pass\"\n",
		"project/harness.toml":                  "[tools]\nshell = [\"run\"]\n",
		"project/roles/notes.txt":               "not a role file, but in the directory\n",
		"project/policies/large_reads_test.txt": string(make([]byte, 4<<10)),
	}
	for name, content := range files {
		write(tb, filepath.Join(s.dir, name), content)
	}
	for _, p := range []string{"project/roles", "user/roles", "user-data/roles", "project/policies", "user/policies", "user-data/policies", "user/harness.toml", "project/harness.toml"} {
		s.paths = append(s.paths, filepath.Join(s.dir, p))
	}
	return s
}

func write(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// keepStat rewrites a file with content of the same size and puts its
// modification time back: what a size-and-time fingerprint cannot see.
func keepStat(tb testing.TB, path, content string) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if int64(len(content)) != fi.Size() {
		tb.Fatalf("%s: the new content has %d bytes, the file %d", path, len(content), fi.Size())
	}
	write(tb, path, content)
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		tb.Fatal(err)
	}
}

// Every edit of what a load reads changes the fingerprint, including one
// that keeps the file's size and modification time; what changes nothing
// a load reads keeps it.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		edit    func(t *testing.T, dir string)
		changed bool
	}{
		{"nothing", func(t *testing.T, dir string) {}, false},
		{"touched, same bytes", func(t *testing.T, dir string) {
			later := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(dir, "project/roles/team.toml"), later, later)
		}, false},
		{"role edited, same size and time", func(t *testing.T, dir string) {
			keepStat(t, filepath.Join(dir, "project/roles/team.toml"), "[role]\ninherits = \"coder\"\n\n[limits]\nmax_shell_invocations = 99\n")
		}, true},
		{"policy edited, same size and time", func(t *testing.T, dir string) {
			keepStat(t, filepath.Join(dir, "user/policies/edits.rego"), "package harness.custom.edits\n\ndeny contains \"no\" if input.tool == \"ctx_xxxx\"\n")
		}, true},
		{"configuration edited, same size and time", func(t *testing.T, dir string) {
			keepStat(t, filepath.Join(dir, "user/harness.toml"), "[enforcement]\ndefault_role = \"admin\"\n\n[hook]\nallow = \"pass\"\n")
		}, true},
		{"file added", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "user-data/policies/new.rego"), "package harness.custom.new\n")
		}, true},
		{"file removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "project/policies/shell_test.rego"))
		}, true},
		{"file renamed", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "project/roles/auditor.toml"), filepath.Join(dir, "project/roles/auditer.toml"))
		}, true},
		{"contents swapped between files", func(t *testing.T, dir string) {
			a, b := filepath.Join(dir, "project/policies/shell.rego"), filepath.Join(dir, "project/policies/shell_test.rego")
			ca, _ := os.ReadFile(a)
			cb, _ := os.ReadFile(b)
			write(t, a, string(cb))
			write(t, b, string(ca))
		}, true},
		{"configuration file removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "project/harness.toml"))
		}, true},
		{"file replaced by a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "project/roles/notes.txt"))
			os.Mkdir(filepath.Join(dir, "project/roles/notes.txt"), 0o755)
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSources(t)
			before := Fingerprint(s.paths)
			if again := Fingerprint(s.paths); again != before {
				t.Fatal("two fingerprints of the same files differ")
			}
			tt.edit(t, s.dir)
			if after := Fingerprint(s.paths); (after != before) != tt.changed {
				t.Errorf("fingerprint changed: %v, want %v", after != before, tt.changed)
			}
		})
	}
}

// BenchmarkFingerprint is the cost the daemon adds to every call to see
// edits: the files of a project with a few roles, policies and both
// configuration files.
func BenchmarkFingerprint(b *testing.B) {
	s := newSources(b)
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint(s.paths)
	}
}
