package roles

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mkdirs creates directories (and, for names ending in "=file", empty
// files) under dir.
func mkdirs(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if name, ok := strings.CutSuffix(p, "=file"); ok {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// The project root is the outermost directory below the home directory
// that holds .git or a .lean-ctx directory, and every .lean-ctx from the
// start directory up to it is a layer: a nested, empty .lean-ctx adds to
// the repository's rules, never hides them.
func TestFindProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "users", "home")
	mkdirs(t, dir,
		"users/.git",                          // above the home directory: never reached from inside it
		"users/home/.lean-ctx/roles",          // the user's: never a project
		"users/home/src/repo/.git",            // a work tree
		"users/home/src/repo/.lean-ctx/roles", // with roles
		"users/home/src/repo/pkg/.lean-ctx",   // an empty nested .lean-ctx
		"users/home/src/repo/pkg/deep/er",
		"users/home/src/repo/vendor/lib/.git", // a nested work tree: the outer one is the project
		"users/home/src/wt/.git=file",         // a worktree's .git is a file
		"users/home/src/wt/sub",
		"users/home/src/loose/.lean-ctx=file", // a .lean-ctx file is not a layer
		"users/home/src/loose/sub",
		"outside/proj/.lean-ctx", // outside the home directory
		"outside/proj/a/.git",
		"outside/proj/a/b",
	)
	repo := filepath.Join(home, "src", "repo")
	outside := filepath.Join(dir, "outside", "proj")
	layers := func(dirs ...string) []string {
		var out []string
		for _, d := range dirs {
			out = append(out, filepath.Join(d, ".lean-ctx"))
		}
		return out
	}
	tests := []struct {
		name, from, root string
		layers           []string
	}{
		{"the root itself", repo, repo, layers(repo)},
		{"a subdirectory with an empty .lean-ctx", filepath.Join(repo, "pkg"), repo, layers(repo, filepath.Join(repo, "pkg"))},
		{"below it, every directory between is a layer", filepath.Join(repo, "pkg", "deep", "er"), repo,
			layers(repo, filepath.Join(repo, "pkg"), filepath.Join(repo, "pkg", "deep"), filepath.Join(repo, "pkg", "deep", "er"))},
		{"a nested work tree", filepath.Join(repo, "vendor", "lib"), repo,
			layers(repo, filepath.Join(repo, "vendor"), filepath.Join(repo, "vendor", "lib"))},
		{"a worktree's .git file", filepath.Join(home, "src", "wt", "sub"), filepath.Join(home, "src", "wt"),
			layers(filepath.Join(home, "src", "wt"), filepath.Join(home, "src", "wt", "sub"))},
		{"a .lean-ctx file is no project", filepath.Join(home, "src", "loose", "sub"), "", nil},
		{"the home directory is never a project", home, "", nil},
		{"nor is what is above it", filepath.Join(home, "src"), "", nil},
		{"outside the home directory, up to the outermost", filepath.Join(outside, "a", "b"), outside,
			layers(outside, filepath.Join(outside, "a"), filepath.Join(outside, "a", "b"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := FindProjectRoot(tt.from, home)
			if root != tt.root {
				t.Fatalf("FindProjectRoot(%s) = %q, want %q", tt.from, root, tt.root)
			}
			if got := ProjectLayers(root, tt.from, home); !slices.Equal(got, tt.layers) {
				t.Errorf("layers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.layers, "\n"))
			}
		})
	}

	// --project names the root: its layer, and those between it and a
	// working directory below it; never the home directory's.
	for _, tt := range []struct {
		name, root, from string
		layers           []string
	}{
		{"working below the root", repo, filepath.Join(repo, "pkg"), layers(repo, filepath.Join(repo, "pkg"))},
		{"working elsewhere", repo, filepath.Join(dir, "outside"), layers(repo)},
		{"the home directory as the root", home, filepath.Join(home, "src"), layers(filepath.Join(home, "src"))},
	} {
		if got := ProjectLayers(tt.root, tt.from, home); !slices.Equal(got, tt.layers) {
			t.Errorf("%s: layers\n%s\nwant\n%s", tt.name, strings.Join(got, "\n"), strings.Join(tt.layers, "\n"))
		}
	}

	// The home directory named through a link is still the home
	// directory: its .lean-ctx is never a project's.
	linked := filepath.Join(dir, "linked-home")
	if err := os.Symlink(home, linked); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ from, home string }{
		{filepath.Join(home, "src"), linked},
		{filepath.Join(linked, "src"), home},
	} {
		if root := FindProjectRoot(tt.from, tt.home); root != "" {
			t.Errorf("from %s with home %s: root %s", tt.from, tt.home, root)
		}
		if got := ProjectLayers(filepath.Dir(tt.from), tt.from, tt.home); len(got) != 1 || filepath.Base(filepath.Dir(got[0])) != "src" {
			t.Errorf("layers from %s with home %s: %v", tt.from, tt.home, got)
		}
	}

	d := FindDirs(Locate{WorkDir: filepath.Join(repo, "pkg"), Home: home, XDGDataHome: filepath.Join(dir, "xdg")})
	if want := []string{filepath.Join(repo, ProjectRolesDir), filepath.Join(repo, "pkg", ProjectRolesDir)}; !slices.Equal(d.Project, want) {
		t.Errorf("project dirs %q, want %q", d.Project, want)
	}
	if !slices.Equal(d.User, []string{filepath.Join(home, ".lean-ctx", "roles"), filepath.Join(dir, "xdg", "lean-ctx", "roles")}) {
		t.Errorf("user dirs %v", d.User)
	}
	if d := FindDirs(Locate{Project: outside, Home: home}); !slices.Equal(d.Project, []string{filepath.Join(outside, ProjectRolesDir)}) ||
		d.User[1] != filepath.Join(home, ".local", "share", "lean-ctx", "roles") {
		t.Errorf("explicit project: %+v", d)
	}
}

// Every layer's roles apply, and a name is defined once across them all.
func TestProjectLayersRoles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "repo", ProjectRolesDir)
	nested := filepath.Join(dir, "repo", "pkg", ProjectRolesDir)
	writeRoles(t, root, map[string]string{"team.toml": "[role]\ninherits = \"reviewer\"\n"})
	writeRoles(t, nested, map[string]string{"pkg-team.toml": "[role]\ninherits = \"team\"\n[limits]\nmax_context_tokens = 10\n"})
	set, err := Load(Dirs{Project: []string{root, nested}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := set.Get("pkg-team"); !ok || r.Source != SourceProject || r.Limits.MaxContextTokens != 10 || !slices.Equal(r.Chain, []string{"pkg-team", "team", "reviewer"}) {
		t.Errorf("pkg-team: %+v", r)
	}
	if _, ok := set.Get("team"); !ok {
		t.Error("the root layer's role is gone")
	}

	writeRoles(t, nested, map[string]string{"team.toml": "[role]\ninherits = \"coder\"\n"})
	_, err = Load(Dirs{Project: []string{root, nested}})
	var list ErrorList
	want := filepath.Join(nested, "team.toml") + `:1:1: role "team" is already defined by ` + filepath.Join(root, "team.toml") + " (project): a project may only add roles"
	if !errors.As(err, &list) || len(list) != 1 || !strings.HasPrefix(list[0].Error(), want) {
		t.Errorf("a name defined by two layers: %v\nwant %s...", err, want)
	}
}
