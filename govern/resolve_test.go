package govern

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Resolve follows the links of a path as the file system would, from the
// call's directory and the project's for a relative path, past a missing
// component, and within its bounds: a loop, a chain too long, /proc, too
// many paths and a path too long are unresolved (nil); a FIFO is never
// opened.
func TestResolve(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	home, project, sub := filepath.Join(root, "home"), filepath.Join(root, "project"), filepath.Join(root, "project", "sub")
	for _, d := range []string{filepath.Join(home, ".lean-ctx", "roles"), filepath.Join(project, "src"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(project, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"notes":   filepath.Join(home, ".lean-ctx"),
		"hop":     "notes",
		"lib":     "src",
		"up":      "src/..",
		"loop":    "loop",
		"proc":    "/proc/self/cwd",
		"dangle":  filepath.Join(home, ".lean-ctx", "roles", "new.toml"),
		"sub/cfg": "../notes",
	}
	for i := range MaxLinks + 1 {
		links["chain"+strconv.Itoa(i)] = "chain" + strconv.Itoa(i+1)
	}
	links["chain"+strconv.Itoa(MaxLinks+1)] = "src"
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(project, name)); err != nil {
			t.Fatal(err)
		}
	}
	in := func(rel string) string { return project + "/" + rel }
	lean := func(rel string) string { return filepath.Join(home, ".lean-ctx", rel) }
	for _, tt := range []struct {
		path string
		dirs []string
		want []string // nil: unresolved; {} nothing differs
	}{
		{in("notes/harness.toml"), nil, []string{lean("harness.toml")}},
		{in("hop/roles/x.toml"), nil, []string{lean("roles/x.toml")}},
		{"notes/roles/x.toml", []string{project}, []string{lean("roles/x.toml")}},
		{"cfg/harness.toml", []string{sub, project}, []string{in("cfg/harness.toml"), lean("harness.toml")}},
		{"file://" + in("notes/x"), nil, []string{lean("x")}},
		{"~/.lean-ctx/x", nil, []string{lean("x")}},
		{in("dangle"), nil, []string{lean("roles/new.toml")}},
		// A .. after a link: the system climbs from the link's target, a
		// tool that cleans the path first from the link.
		{in("notes/../x"), nil, []string{filepath.Join(home, "x"), in("x")}},
		{in("up/notes/x"), nil, []string{lean("x")}},
		{in("missing/../notes/x"), nil, []string{lean("x")}},
		{in("src/missing/../../notes/x"), nil, []string{lean("x")}},
		{in("lib/missing/../../notes/x"), nil, []string{lean("x")}},
		{in("lib/main.go"), nil, []string{in("src/main.go")}},
		{in("src/main.go"), nil, []string{}},
		{in("fifo/x"), nil, []string{}},
		{in("fifo"), nil, []string{}},
		{"relative.go", nil, []string{}},
		{in("loop/x"), nil, nil},
		{in("chain0/x"), nil, nil},
		{in("chain" + strconv.Itoa(MaxLinks-10) + "/x"), nil, []string{in("src/x")}},
		{in("proc/x"), nil, nil},
		{"/proc/self/root" + in("notes"), nil, nil},
		{"/" + strings.Repeat("a/", MaxPathBytes/2+1), nil, nil},
		{in(strings.Repeat("./", MaxLookups)), nil, nil},
	} {
		start := time.Now()
		got := Resolve([]string{tt.path}, home, tt.dirs...)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.80s: %v", tt.path, d)
		}
		real, ok := got[tt.path]
		switch {
		case tt.want == nil:
			if !ok || real != nil {
				t.Errorf("%.80s: %q, want unresolved", tt.path, real)
			}
		case len(tt.want) == 0:
			if got != nil {
				t.Errorf("%.80s: %q, want nothing", tt.path, got)
			}
		default:
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(real, want) {
				t.Errorf("%.80s: %q, want %q", tt.path, real, want)
			}
		}
	}
	// Past MaxResolvedPaths, a path is unresolved, and nothing after it is
	// looked at.
	paths := make([]string, MaxResolvedPaths+5)
	for i := range paths {
		paths[i] = in("src/f" + strconv.Itoa(i))
	}
	got := Resolve(paths, home)
	if len(got) != 1 || got[paths[MaxResolvedPaths]] != nil {
		t.Errorf("%d paths: %q", len(paths), got)
	}
}
