package roles

import (
	"os"
	"path/filepath"
	"strings"
)

// Dirs says where role files are looked for.
type Dirs struct {
	// Root is the project root: no project file is read through a
	// symbolic link that leads out of it, or out of the file's directory.
	// Without it, each project directory is held to itself.
	Root string
	// Project are the roles directories of the project's layers
	// (<layer>/roles, see [ProjectLayers]), the root's first.
	Project []string
	// User are the user's roles directories, highest precedence first.
	User []string
}

// LayerDir is the directory, in a project root or any directory below it,
// that holds a layer of the project's roles, policies and configuration.
const LayerDir = ".lean-ctx"

// ProjectRolesDir is where, under a project root, project roles live.
const ProjectRolesDir = LayerDir + "/roles"

// Locate is what FindDirs needs to know of the process's surroundings.
type Locate struct {
	Project     string // --project DIR; "" to search from WorkDir
	WorkDir     string
	Home        string
	XDGDataHome string // $XDG_DATA_HOME; "" means ~/.local/share
}

// FindDirs returns the role directories for l: the project's layers' (the
// root given, or found from the working directory) and the user's
// (~/.lean-ctx/roles, then $XDG_DATA_HOME/lean-ctx/roles).
func FindDirs(l Locate) Dirs {
	root := l.Project
	if root == "" {
		root = FindProjectRoot(l.WorkDir, l.Home)
	}
	d := Dirs{Root: root}
	for _, layer := range ProjectLayers(root, l.WorkDir, l.Home) {
		d.Project = append(d.Project, filepath.Join(layer, "roles"))
	}
	if l.Home != "" {
		d.User = append(d.User, filepath.Join(l.Home, LayerDir, "roles"))
	}
	xdg := l.XDGDataHome
	if xdg == "" && l.Home != "" {
		xdg = filepath.Join(l.Home, ".local", "share")
	}
	if xdg != "" {
		if dir := filepath.Join(xdg, "lean-ctx", "roles"); len(d.User) == 0 || d.User[0] != dir {
			d.User = append(d.User, dir)
		}
	}
	return d
}

// FindProjectRoot returns the project root for a start directory: the
// outermost directory, from dir up to but not including the home directory
// and the filesystem root, that holds a .git entry (a work tree; a file in
// a worktree) or a .lean-ctx directory. The outermost, so that a .lean-ctx
// made in a subdirectory cannot take the repository's place: it is one
// more layer (see [ProjectLayers]). The home directory (by name, or the
// same directory through a link) is never a project: ~/.lean-ctx holds the
// user's files. It returns "" when there is none.
func FindProjectRoot(dir, home string) string {
	if dir == "" {
		return ""
	}
	dir = filepath.Clean(dir)
	isHome := homeTest(home)
	root := ""
	for !isHome(dir) {
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		if isLayer(dir) {
			root = dir
		} else if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			root = dir
		}
		dir = parent
	}
	return root
}

// homeTest returns a test of whether a directory is the home directory,
// by name or, through links, as the same directory.
func homeTest(home string) func(dir string) bool {
	if home == "" {
		return func(string) bool { return false }
	}
	home = filepath.Clean(home)
	hi, err := os.Stat(home)
	return func(dir string) bool {
		if filepath.Clean(dir) == home {
			return true
		}
		if err != nil {
			return false
		}
		di, derr := os.Stat(dir)
		return derr == nil && os.SameFile(hi, di)
	}
}

// isLayer reports whether dir holds a .lean-ctx directory.
func isLayer(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, LayerDir))
	return err == nil && fi.IsDir()
}

// ProjectLayers returns the .lean-ctx directories of the project at root,
// as seen from workDir: the root's, then, when workDir is below the root,
// those of every directory between them down to workDir, whether they
// exist yet or not (for watching). All of them apply: each adds roles,
// policies and configuration; none hides another. The home directory's
// .lean-ctx holds the user's files and is never a layer. Without a root
// there are none.
func ProjectLayers(root, workDir, home string) []string {
	if root == "" {
		return nil
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		absRoot = filepath.Clean(root)
	}
	isHome := homeTest(home)
	var layers []string
	add := func(dir string) {
		if !isHome(dir) {
			layers = append(layers, filepath.Join(dir, LayerDir))
		}
	}
	add(root)
	if workDir == "" {
		return layers
	}
	absWork, err := filepath.Abs(workDir)
	if err != nil {
		return layers
	}
	rel, err := filepath.Rel(absRoot, absWork)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return layers
	}
	dir := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		add(dir)
	}
	return layers
}
