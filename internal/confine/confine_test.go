package confine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// layout is a file system to build: path → content, "->target" for a
// symbolic link, "fifo" for a named pipe, "dir" for a directory.
type layout map[string]string

func build(t *testing.T, base string, l layout) {
	t.Helper()
	for path, what := range l {
		full := filepath.Join(base, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(what, "->"):
			target := strings.ReplaceAll(what[2:], "BASE", base)
			err = os.Symlink(target, full)
		case what == "fifo":
			err = syscall.Mkfifo(full, 0o644)
		case what == "dir":
			err = os.MkdirAll(full, 0o755)
		default:
			err = os.WriteFile(full, []byte(what), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadDir(t *testing.T) {
	t.Parallel()
	outside := layout{
		"outside/credentials":       "key = " + secret + "\n",
		"outside/roles/a.toml":      "key = " + secret + "\n",
		"outside/lean/roles/a.toml": "key = " + secret + "\n",
	}
	tests := []struct {
		name  string
		files layout
		dir   string   // read, below the project root "repo"
		user  bool     // read as the user's: links followed
		read  string   // the files read, "name=content ..."
		errs  []string // each error: "PATH: message prefix"
	}{
		{name: "plain files, in name order, directories and other names skipped",
			files: layout{"repo/.lean-ctx/roles/b.toml": "b", "repo/.lean-ctx/roles/a.toml": "a", "repo/.lean-ctx/roles/c.md": "c", "repo/.lean-ctx/roles/d.toml/x": "x"},
			dir:   ".lean-ctx/roles", read: "a.toml=a b.toml=b"},
		{name: "a missing directory has no files", dir: ".lean-ctx/roles"},
		{name: "a file linking out of the project, absolute",
			files: layout{"repo/.lean-ctx/roles/leak.toml": "->BASE/outside/credentials", "repo/.lean-ctx/roles/ok.toml": "ok"},
			dir:   ".lean-ctx/roles", read: "ok.toml=ok",
			errs: []string{"repo/.lean-ctx/roles/leak.toml: refused: a symbolic link that leads out of repo/.lean-ctx/roles"}},
		{name: "a file linking out of the project, relative",
			files: layout{"repo/.lean-ctx/roles/leak.toml": "->../../../outside/credentials"},
			dir:   ".lean-ctx/roles", errs: []string{"repo/.lean-ctx/roles/leak.toml: refused: a symbolic link that leads out of"}},
		{name: "a file linking out of its directory, inside the project",
			files: layout{"repo/.lean-ctx/roles/x.toml": "->../policies/x.rego", "repo/.lean-ctx/policies/x.rego": "p"},
			dir:   ".lean-ctx/roles", errs: []string{"repo/.lean-ctx/roles/x.toml: refused: a symbolic link that leads out of"}},
		{name: "a link through a link to the outside",
			files: layout{"repo/.lean-ctx/roles/x.toml": "->y.toml", "repo/.lean-ctx/roles/y.toml": "->BASE/outside/credentials"},
			dir:   ".lean-ctx/roles", errs: []string{
				"repo/.lean-ctx/roles/x.toml: refused: a symbolic link that leads out of",
				"repo/.lean-ctx/roles/y.toml: refused: a symbolic link that leads out of"}},
		{name: "links inside the directory are followed, relative or absolute",
			files: layout{"repo/.lean-ctx/roles/a.toml": "->real.toml", "repo/.lean-ctx/roles/b.toml": "->BASE/repo/.lean-ctx/roles/sub/real", "repo/.lean-ctx/roles/real.toml": "r", "repo/.lean-ctx/roles/sub/real": "s"},
			dir:   ".lean-ctx/roles", read: "a.toml=r b.toml=s real.toml=r"},
		{name: "a roles directory linking out of the project",
			files: layout{"repo/.lean-ctx/roles": "->BASE/outside/roles"},
			dir:   ".lean-ctx/roles", errs: []string{"repo/.lean-ctx/roles: refused: a symbolic link that leads out of the project root repo"}},
		{name: "a .lean-ctx linking out of the project",
			files: layout{"repo/pkg/.lean-ctx": "->../../outside/lean"},
			dir:   "pkg/.lean-ctx/roles", errs: []string{"repo/pkg/.lean-ctx: refused: a symbolic link that leads out of the project root repo"}},
		{name: "a directory on the way linking out",
			files: layout{"repo/pkg": "->BASE/outside"},
			dir:   "pkg/lean/roles", errs: []string{"repo/pkg: refused: a symbolic link that leads out of the project root repo"}},
		{name: "a .lean-ctx linking inside the project is followed",
			files: layout{"repo/.lean-ctx": "->config/lean", "repo/config/lean/roles/a.toml": "a"},
			dir:   ".lean-ctx/roles", read: "a.toml=a"},
		{name: "a .lean-ctx file is no layer", files: layout{"repo/pkg/.lean-ctx": "not a directory"}, dir: "pkg/.lean-ctx/roles"},
		{name: "a link to nothing",
			files: layout{"repo/.lean-ctx/roles/gone.toml": "->nothing.toml"},
			dir:   ".lean-ctx/roles", errs: []string{"repo/.lean-ctx/roles/gone.toml: cannot read: a symbolic link to nothing"}},
		{name: "a named pipe is not read (nor waited on)",
			files: layout{"repo/.lean-ctx/roles/pipe.toml": "fifo", "repo/.lean-ctx/roles/dir.toml": "->sub", "repo/.lean-ctx/roles/sub": "dir"},
			dir:   ".lean-ctx/roles", errs: []string{
				"repo/.lean-ctx/roles/dir.toml: cannot read: not a regular file",
				"repo/.lean-ctx/roles/pipe.toml: cannot read: not a regular file"}},
		{name: "the user's files may link anywhere",
			files: layout{"home/roles/a.toml": "->BASE/outside/roles/a.toml", "home/roles/p.toml": "fifo"},
			dir:   "home/roles", user: true, read: "a.toml=key = " + secret + "\n",
			errs: []string{"home/roles/p.toml: cannot read: not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			build(t, base, outside)
			build(t, base, tt.files)
			root := filepath.Join(base, "repo")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, tt.dir)
			if tt.user {
				root, dir = "", filepath.Join(base, tt.dir)
			}
			done := make(chan struct{})
			var files []File
			var errs []string
			go func() {
				defer close(done)
				found, el := ReadDir(root, dir, ".toml")
				files = found
				for _, e := range el {
					errs = append(errs, strings.ReplaceAll(e.Error(), base+"/", ""))
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ReadDir blocked")
			}
			var read []string
			for _, f := range files {
				read = append(read, filepath.Base(f.Path)+"="+string(f.Src))
			}
			if got := strings.Join(read, " "); got != tt.read {
				t.Errorf("read %q, want %q", got, tt.read)
			}
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(tt.errs, "\n"))
			}
			for i, want := range tt.errs {
				if !strings.HasPrefix(errs[i], want) {
					t.Errorf("error %d:\n got %s\nwant %s…", i, errs[i], want)
				}
				if strings.Contains(errs[i], "outside") || strings.Contains(errs[i], secret[:6]) {
					t.Errorf("error %d tells of the link's target: %s", i, errs[i])
				}
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	build(t, base, layout{
		"outside/credentials":           "key = " + secret + "\n",
		"outside/lean/harness.toml":     "key = " + secret + "\n",
		"repo/.lean-ctx/harness.toml":   "[tools]\n",
		"repo/a/.lean-ctx/harness.toml": "->BASE/outside/credentials",
		"repo/b/.lean-ctx":              "->BASE/outside/lean",
		"repo/c/.lean-ctx/harness.toml": "->../../.lean-ctx/harness.toml",
		"repo/d/.lean-ctx":              "->BASE/repo/.lean-ctx", // absolute, inside
		"home/.lean-ctx/harness.toml":   "->BASE/outside/credentials",
	})
	root := filepath.Join(base, "repo")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relRoot, err := filepath.Rel(wd, root) // as --project ../repo gives it
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root, file, src, err string
		ok                   bool
	}{
		{relRoot, "repo/d/.lean-ctx/harness.toml", "[tools]\n", "", true},
		{root, "repo/.lean-ctx/harness.toml", "[tools]\n", "", true},
		{root, "repo/missing/.lean-ctx/harness.toml", "", "", false},
		{root, "repo/a/.lean-ctx/harness.toml", "", "repo/a/.lean-ctx/harness.toml: refused: a symbolic link that leads out of repo/a/.lean-ctx", false},
		{root, "repo/b/.lean-ctx/harness.toml", "", "repo/b/.lean-ctx: refused: a symbolic link that leads out of the project root repo", false},
		{root, "repo/c/.lean-ctx/harness.toml", "", "repo/c/.lean-ctx/harness.toml: refused: a symbolic link that leads out of repo/c/.lean-ctx", false},
		{"", "home/.lean-ctx/harness.toml", "key = " + secret + "\n", "", true},
		{"", "home/.lean-ctx/missing.toml", "", "", false},
	} {
		file := filepath.Join(base, tt.file)
		if tt.root == relRoot {
			file = filepath.Join(relRoot, strings.TrimPrefix(tt.file, "repo/"))
		}
		src, ok, err := ReadFile(tt.root, file)
		var msg string
		if err != nil {
			msg = strings.ReplaceAll(err.Error(), base+"/", "")
		}
		if string(src) != tt.src || ok != tt.ok || !strings.HasPrefix(msg, tt.err) || (tt.err == "") != (err == nil) {
			t.Errorf("%s: %q %v %q, want %q %v %q", tt.file, src, ok, msg, tt.src, tt.ok, tt.err)
		}
	}
}
