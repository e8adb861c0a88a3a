package custom

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindAndLoad(t *testing.T) {
	t.Parallel()
	root, home := t.TempDir(), t.TempDir()
	for path, src := range map[string]string{
		filepath.Join(root, ".lean-ctx", "policies", "a.rego"):      "package harness.custom.a\n",
		filepath.Join(root, ".lean-ctx", "policies", "a_test.rego"): "package harness.custom.a_test\n",
		filepath.Join(root, ".lean-ctx", "policies", "notes.md"):    "not a policy",
		filepath.Join(home, ".lean-ctx", "policies", "b.rego"):      "package harness.custom.b\n",
		// A nested layer's policy of the same file name: its own bundle folder.
		filepath.Join(root, "pkg", "sub", ".lean-ctx", "policies", "a.rego"): "package harness.custom.pkg_a\n",
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(src), 0o644)
	}
	layers := []string{filepath.Join(root, ".lean-ctx"), filepath.Join(root, "pkg", ".lean-ctx"), filepath.Join(root, "pkg", "sub", ".lean-ctx")}
	dirs := FindDirs(root, layers, home, "")
	if len(dirs) != 5 || dirs[4].Path != filepath.Join(home, ".local", "share", "lean-ctx", "policies") ||
		dirs[1] != (Dir{Path: filepath.Join(root, "pkg", ".lean-ctx", "policies"), Bundle: "policies/project/pkg", Root: root}) {
		t.Fatalf("dirs %+v", dirs)
	}
	mods, err := Load(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	if strings.Join(names, " ") != "policies/project/a.rego policies/project/a_test.rego policies/project/pkg/sub/a.rego policies/user/b.rego" {
		t.Errorf("modules %v", names)
	}
	if !IsTest(mods[1]) || IsTest(mods[0]) || mods[0].File != filepath.Join(root, ".lean-ctx", "policies", "a.rego") {
		t.Errorf("module fields %+v", mods[0])
	}
	paths, err := LoadPaths([]string{filepath.Join(home, ".lean-ctx", "policies", "b.rego"), filepath.Join(root, ".lean-ctx", "policies")})
	if err != nil || len(paths) != 3 {
		t.Errorf("LoadPaths: %d modules, %v", len(paths), err)
	}
	if _, err := LoadPaths([]string{filepath.Join(root, "missing")}); err == nil {
		t.Error("a missing path was accepted")
	}
}

// A project's policy that links out of the project is refused, naming the
// link and nothing of its target; the user's may link anywhere.
func TestProjectPoliciesStayInside(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	dir := t.TempDir()
	root, home, outside := filepath.Join(dir, "repo"), filepath.Join(dir, "home"), filepath.Join(dir, "outside")
	for path, src := range map[string]string{
		filepath.Join(outside, "credentials"): "aws_secret_access_key = " + secret + "\n",
		filepath.Join(outside, "mine.rego"):   "package harness.custom.mine\n",
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(src), 0o644)
	}
	for link, target := range map[string]string{
		filepath.Join(root, ".lean-ctx", "policies", "leak.rego"): filepath.Join(outside, "credentials"),
		filepath.Join(home, ".lean-ctx", "policies", "mine.rego"): filepath.Join(outside, "mine.rego"),
	} {
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	dirs := FindDirs(root, []string{filepath.Join(root, ".lean-ctx")}, home, "")
	mods, err := Load(dirs)
	leak := filepath.Join(root, ".lean-ctx", "policies", "leak.rego")
	if err == nil || !strings.HasPrefix(err.Error(), leak+": refused: a symbolic link that leads out of") || strings.Contains(err.Error(), secret[:8]) || strings.Contains(err.Error(), "credentials") {
		t.Errorf("a project policy linking out: %v", err)
	}
	if len(mods) != 1 || mods[0].Name != "policies/user/mine.rego" {
		t.Errorf("a user's policy may be a link: %+v", mods)
	}
}
