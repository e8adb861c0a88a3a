// Package confine reads a project's own files (the roles, policies and
// harness.toml of its .lean-ctx layers) so that no symbolic link takes a
// read out of the project. The agent controls the repository, and a link
// there to a file outside (a credentials file, say) must not get that
// file read and quoted back in an error: a project directory that leads
// out of the project root, or a project file that leads out of its
// directory, is refused with an error that names the link and nothing of
// what it points to. Links that stay inside are followed. The reads go
// through [os.Root], so a link swapped in after the check cannot take them
// out of the project either.
//
// The user's own files (an empty root) are read as they are: dotfile
// managers make them links, and the agent does not control them. Every
// file must be a regular file: a FIFO or a device would block or never
// end.
package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentharness/harness/internal/strict"
)

// File is one file read: its path as found (the directory joined with the
// name, a link's own path for a link) and its content.
type File struct {
	Path string
	Src  []byte
}

// ReadDir reads the files of dir whose names end in suffix, in name order,
// skipping directories. With root set (the project root, which dir is
// below), dir may not lead out of root, nor a file out of dir. A missing
// directory has no files. Every file that cannot be read is an error; the
// others are read.
func ReadDir(root, dir, suffix string) ([]File, strict.ErrorList) {
	if root == "" {
		return readPlain(dir, suffix)
	}
	d, err := openDir(root, dir)
	if d == nil {
		return nil, listOf(err)
	}
	defer d.fs.Close()
	f, oerr := d.fs.Open(".")
	if oerr != nil {
		return nil, strict.ErrorList{{File: dir, Msg: "cannot read the directory: " + reason(oerr)}}
	}
	entries, rerr := f.ReadDir(-1)
	f.Close()
	if rerr != nil {
		return nil, strict.ErrorList{{File: dir, Msg: "cannot read the directory: " + reason(rerr)}}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var files []File
	var errs strict.ErrorList
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		src, ok, err := d.read(e.Name())
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			files = append(files, File{Path: filepath.Join(dir, e.Name()), Src: src})
		}
	}
	return files, errs
}

// ReadFile reads one file (a harness.toml). With root set, its directory
// may not lead out of root, nor the file out of its directory. ok is false
// when the file does not exist.
func ReadFile(root, file string) (src []byte, ok bool, err *strict.Error) {
	if root == "" {
		return readRegular(file, false, func() (*os.File, error) { return openNonblock(file) })
	}
	d, err := openDir(root, filepath.Dir(file))
	if d == nil {
		return nil, false, err
	}
	defer d.fs.Close()
	return d.read(filepath.Base(file))
}

// dir is a project directory, checked and opened.
type dir struct {
	path string   // as found
	real string   // with every link followed
	fs   *os.Root // the directory, opened inside the project root
}

// openDir checks that dir, below root, does not lead out of it, and opens
// it; nil (with a nil error) when it does not exist.
func openDir(root, path string) (*dir, *strict.Error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		realRoot, err = filepath.Abs(realRoot) // as absolute links resolve
	}
	if err != nil {
		return nil, &strict.Error{File: root, Msg: "cannot read the project root: " + reason(err)}
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, &strict.Error{File: path, Msg: fmt.Sprintf("not inside the project root %s", root)}
	}
	real, link, err := resolve(root, realRoot, rel)
	switch {
	case link != "":
		return nil, &strict.Error{File: link, Msg: fmt.Sprintf(
			"refused: a symbolic link that leads out of the project root %s (a project's files are read only from inside it)", root)}
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	top, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, &strict.Error{File: root, Msg: "cannot read the project root: " + reason(err)}
	}
	defer top.Close()
	inner, err := filepath.Rel(realRoot, real)
	if err == nil {
		var r *os.Root
		if r, err = top.OpenRoot(inner); err == nil {
			return &dir{path: path, real: real, fs: r}, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return nil, &strict.Error{File: path, Msg: "cannot read the directory: " + reason(err)}
}

// read reads the file name of the directory, which may not lead out of it.
func (d *dir) read(name string) ([]byte, bool, *strict.Error) {
	path := filepath.Join(d.path, name)
	real, link, err := resolve(d.path, d.real, name)
	switch {
	case link != "":
		return nil, false, &strict.Error{File: link, Msg: fmt.Sprintf(
			"refused: a symbolic link that leads out of %s (a project's roles, policies and configuration are read only from inside their directory)", d.path)}
	case errors.Is(err, fs.ErrNotExist):
		if fi, lerr := os.Lstat(filepath.Join(d.real, name)); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, false, &strict.Error{File: path, Msg: "cannot read: a symbolic link to nothing"}
		}
		return nil, false, nil
	case err != nil:
		return nil, false, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	inner, err := filepath.Rel(d.real, real)
	if err != nil {
		return nil, false, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	return readRegular(path, false, func() (*os.File, error) {
		return d.fs.OpenFile(inner, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	})
}

// resolve follows rel, below base (whose real path is realBase), one
// element at a time. It returns the real path, or the path (under base) of
// the first symbolic link that leads out of realBase.
func resolve(base, realBase, rel string) (real, link string, err error) {
	cur, lex := realBase, base
	if rel == "." {
		return cur, "", nil
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		next := filepath.Join(cur, part)
		lex = filepath.Join(lex, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, syscall.ENOTDIR) {
			return "", "", fs.ErrNotExist // a file on the way: a .lean-ctx file is no layer
		}
		if err != nil {
			return "", "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return "", "", fs.ErrNotExist
				}
				return "", "", err
			}
			if !within(realBase, target) {
				return "", lex, nil
			}
			next = target
		}
		cur = next
	}
	return cur, "", nil
}

// within reports whether path is base or below it.
func within(base, path string) bool {
	rel, err := filepath.Rel(base, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// readPlain reads the files of a directory of the user's, following links.
func readPlain(dir, suffix string) ([]File, strict.ErrorList) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, strict.ErrorList{{File: dir, Msg: "cannot read the directory: " + reason(err)}}
	}
	var files []File
	var errs strict.ErrorList
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		src, ok, err := readRegular(path, true, func() (*os.File, error) { return openNonblock(path) })
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			files = append(files, File{Path: path, Src: src})
		}
	}
	return files, errs
}

func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// readRegular opens a file (without blocking on a FIFO) and reads it if it
// is a regular file. listed says the file was found in its directory, so
// that a missing file is a link to nothing.
func readRegular(path string, listed bool, open func() (*os.File, error)) ([]byte, bool, *strict.Error) {
	f, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		if listed {
			return nil, false, &strict.Error{File: path, Msg: "cannot read: a symbolic link to nothing"}
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, false, &strict.Error{File: path, Msg: "cannot read: not a regular file"}
	}
	src, err := io.ReadAll(f)
	if err != nil {
		return nil, false, &strict.Error{File: path, Msg: "cannot read: " + reason(err)}
	}
	return src, true, nil
}

// reason is what went wrong, without the path an *fs.PathError repeats
// (which, inside an os.Root, is a path the caller did not give).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// listOf makes a list of err, if any.
func listOf(err *strict.Error) strict.ErrorList {
	if err == nil {
		return nil
	}
	return strict.ErrorList{err}
}
