package govern

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Bounds of the resolution of a call's paths (Resolve): the agent chooses
// how many path arguments an edit has and how long they are, and the
// symbolic links they go through. A path beyond them is given as
// unresolved (nil), which the policy refuses.
const (
	// MaxResolvedPaths is how many path arguments of one call are
	// resolved.
	MaxResolvedPaths = 64
	// MaxPathBytes is the longest path resolved (Linux's PATH_MAX): the
	// file system takes no longer one.
	MaxPathBytes = 4096
	// MaxLinks is how many symbolic links one path may go through (as
	// filepath.EvalSymlinks; the systems follow 32 or 40).
	MaxLinks = 255
	// MaxLookups bounds the steps of the resolution of one call, all its
	// paths together: a component looked at (an lstat for a name), a link
	// read (a readlink).
	MaxLookups = 4096
)

// Resolve is input.resolved for the path arguments of an edit (see
// contract.Input.Resolved): each path as the file system resolves it now,
// when that differs from the path as written. A path written from the
// home directory (~/, $HOME/, ${HOME}/) is read from home, and a file://
// URI as its path, as the policy reads them; a relative path is resolved
// from each of dirs (the call's working directory and the project's root).
// Each is resolved twice, as the system does (a .. after a link climbs
// from the link's target) and as a tool that cleans the path first does
// (a .. takes the name before it), and both are given. A path is resolved
// by following its symbolic links, one component after the other; a
// component that does not exist is taken for a directory the tool would
// make (as Write does), so that a .. after it climbs back.
// Nothing is opened: each component is looked up (lstat) and a link read
// (readlink), so neither a FIFO nor a device is touched, and a link loop
// ends at MaxLinks. A link under /proc (whose target depends on the
// process that reads it), too many paths, links or lookups, a path
// longer than MaxPathBytes or one whose links make what is left to
// resolve longer than twice that leave the path unresolved (nil). The result is
// nil when nothing differs.
func Resolve(paths []string, home string, dirs ...string) map[string][]string {
	var out map[string][]string
	put := func(path string, real []string) {
		if out == nil {
			out = map[string][]string{}
		}
		out[path] = real
	}
	lookups := MaxLookups
	for i, path := range paths {
		if i == MaxResolvedPaths {
			put(path, nil)
			break
		}
		var real []string
		ok := len(path) <= MaxPathBytes && !strings.ContainsRune(path, 0)
		for _, p := range bases(path, home, dirs) {
			if !ok {
				break
			}
			for _, q := range []string{p, filepath.Clean(p)} {
				r, good := resolve(q, &lookups)
				if !good {
					ok = false
					break
				}
				if !slices.Contains(real, r) {
					real = append(real, r)
				}
			}
		}
		switch {
		case !ok:
			put(path, nil)
		case len(real) == 0 || len(real) == 1 && real[0] == path:
		default:
			slices.Sort(real)
			put(path, real)
		}
	}
	return out
}

// bases are the absolute forms of path: itself, or from the home
// directory, or from each of dirs; none for a relative path without dirs.
func bases(path, home string, dirs []string) []string {
	p := strings.TrimPrefix(path, "file://")
	for _, prefix := range []string{"~/", "$HOME/", "${HOME}/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok && home != "" {
			return []string{strings.TrimRight(home, "/") + "/" + rest}
		}
	}
	if strings.HasPrefix(p, "/") {
		return []string{p}
	}
	var out []string
	for _, dir := range dirs {
		if strings.HasPrefix(dir, "/") {
			if abs := strings.TrimRight(dir, "/") + "/" + p; !slices.Contains(out, abs) {
				out = append(out, abs)
			}
		}
	}
	return out
}

// resolve resolves the absolute path p as the file system does (see
// Resolve), spending lookups; ok is false when it could not within the
// bounds.
func resolve(p string, lookups *int) (real string, ok bool) {
	done, todo, links := "/", p, 0
	for todo != "" {
		var name string
		name, todo, _ = strings.Cut(strings.TrimLeft(todo, "/"), "/")
		if *lookups <= 0 {
			return "", false
		}
		*lookups--
		switch name {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, name)
		fi, err := os.Lstat(next)
		if err != nil {
			// It does not exist (or cannot be looked up): a tool
			// would create it as a directory or a file, or fail. What
			// follows is looked up as well: a .. may climb back to a
			// link.
			done = next
			continue
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > MaxLinks || next == "/proc" || strings.HasPrefix(next, "/proc/") || *lookups <= 0 {
			return "", false
		}
		*lookups--
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if strings.HasPrefix(target, "/") {
			done = "/"
		}
		todo = target + "/" + todo
		if len(todo) > 2*MaxPathBytes {
			return "", false
		}
	}
	return done, true
}
