package roles

import (
	"os"
	"path/filepath"
)

// Dirs says where role files are looked for.
type Dirs struct {
	// Project is the project's roles directory (<root>/.lean-ctx/roles), or "".
	Project string
	// User are the user's roles directories, highest precedence first.
	User []string
}

// ProjectRolesDir is where, under a project root, project roles live.
const ProjectRolesDir = ".lean-ctx/roles"

// Locate is what FindDirs needs to know of the process's surroundings.
type Locate struct {
	Project     string // --project DIR; "" to search from WorkDir
	WorkDir     string
	Home        string
	XDGDataHome string // $XDG_DATA_HOME; "" means ~/.local/share
}

// FindDirs returns the role directories for l: the project's (given, or found
// by walking up from the working directory) and the user's
// (~/.lean-ctx/roles, then $XDG_DATA_HOME/lean-ctx/roles).
func FindDirs(l Locate) Dirs {
	var d Dirs
	root := l.Project
	if root == "" {
		root = FindProjectRoot(l.WorkDir, l.Home)
	}
	if root != "" {
		d.Project = filepath.Join(root, ProjectRolesDir)
	}
	if l.Home != "" {
		d.User = append(d.User, filepath.Join(l.Home, ".lean-ctx", "roles"))
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

// FindProjectRoot walks up from dir to the nearest directory that holds a
// .lean-ctx directory, or a .git entry (a project without roles of its own).
// It never takes the home directory for a project: ~/.lean-ctx holds the
// user's roles. It returns "" when no project is found.
func FindProjectRoot(dir, home string) string {
	if dir == "" {
		return ""
	}
	dir = filepath.Clean(dir)
	if home != "" {
		home = filepath.Clean(home)
	}
	for {
		if dir == home {
			return ""
		}
		if fi, err := os.Stat(filepath.Join(dir, ".lean-ctx")); err == nil && fi.IsDir() {
			return dir
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
