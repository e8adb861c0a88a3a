// Package custom finds the custom Rego policies of a project and of the
// user: the *.rego files (policies, and their *_test.rego tests) in the
// policies/ directory of each of the project's .lean-ctx layers and in the
// user's ~/.lean-ctx/policies/ and $XDG_DATA_HOME/lean-ctx/policies/. It only reads files; the policy
// package checks and compiles them.
package custom

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/internal/confine"
	"github.com/agentharness/harness/internal/strict"
)

// Dir is one directory of policies and the bundle folder its files go to.
type Dir struct {
	Path   string
	Bundle string // e.g. "policies/project"
	// Root is, for a project's directory, the project root: no file is read
	// through a symbolic link that leads out of it, or out of Path (see
	// internal/confine). "" for the user's directories, whose links are
	// followed.
	Root string
}

// FindDirs returns the policy directories of a project's layers (the
// .lean-ctx directories of roles.ProjectLayers, below root) and of the
// user (home and xdgDataHome may be ""), the project's first. Each has its
// own bundle folder: "policies/project" for the root's layer,
// "policies/project/<dir>" for the layer of the directory <dir> below it,
// "policies/user" and "policies/user-data" for the user's.
func FindDirs(root string, layers []string, home, xdgDataHome string) []Dir {
	var dirs []Dir
	for _, layer := range layers {
		bundle := "policies/project"
		if rel, err := filepath.Rel(root, filepath.Dir(layer)); err == nil && rel != "." {
			bundle += "/" + filepath.ToSlash(rel)
		}
		dirs = append(dirs, Dir{Path: filepath.Join(layer, "policies"), Bundle: bundle, Root: root})
	}
	if home != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(home, ".lean-ctx", "policies"), Bundle: "policies/user"})
		if xdgDataHome == "" {
			xdgDataHome = filepath.Join(home, ".local", "share")
		}
	}
	if xdgDataHome != "" {
		dirs = append(dirs, Dir{Path: filepath.Join(xdgDataHome, "lean-ctx", "policies"), Bundle: "policies/user-data"})
	}
	return dirs
}

// Load reads the *.rego files of the directories (missing ones are fine).
func Load(dirs []Dir) ([]compiler.Module, error) {
	var mods []compiler.Module
	var errs strict.ErrorList
	for _, d := range dirs {
		files, e := confine.ReadDir(d.Root, d.Path, ".rego")
		errs = append(errs, e...)
		for _, f := range files {
			mods = append(mods, compiler.Module{Name: d.Bundle + "/" + filepath.Base(f.Path), File: f.Path, Source: f.Src})
		}
	}
	return mods, errs.Err()
}

// LoadPaths reads the *.rego files named, or found in the directories
// named (not recursively), as `harness test PATH...` takes them.
func LoadPaths(paths []string) ([]compiler.Module, error) {
	var mods []compiler.Module
	var errs strict.ErrorList
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &strict.Error{File: p, Msg: err.Error()})
			continue
		}
		bundle := fmt.Sprintf("policies/arg%d", i+1)
		if !fi.IsDir() {
			m, err := read(p, bundle+"/"+filepath.Base(p))
			if err != nil {
				errs = append(errs, err)
			} else {
				mods = append(mods, m)
			}
			continue
		}
		found, err := Load([]Dir{{Path: p, Bundle: bundle}})
		if err != nil {
			return nil, err
		}
		mods = append(mods, found...)
	}
	slices.SortFunc(mods, func(a, b compiler.Module) int { return strings.Compare(a.Name, b.Name) })
	return mods, errs.Err()
}

func read(path, name string) (compiler.Module, *strict.Error) {
	if !strings.HasSuffix(path, ".rego") {
		return compiler.Module{}, &strict.Error{File: path, Msg: "not a .rego file"}
	}
	src, ok, err := confine.ReadFile("", path)
	if err != nil {
		return compiler.Module{}, err
	}
	if !ok {
		return compiler.Module{}, &strict.Error{File: path, Msg: "cannot read: no such file"}
	}
	return compiler.Module{Name: name, File: path, Source: src}, nil
}

// IsTest reports whether m is a test module.
func IsTest(m compiler.Module) bool { return strings.HasSuffix(m.Name, "_test.rego") }
