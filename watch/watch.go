// Package watch keeps a long-running harness (the MCP gateway) on the
// current roles, policies and configuration: it watches their directories
// and calls a rebuild function after changes settle. The rebuild decides
// what a change means; a failed rebuild is reported and the engine keeps
// its last good policy, and the next change tries again.
package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options configure Run.
type Options struct {
	// Paths are directories (role and policy directories) and files
	// (harness.toml) to watch. They need not exist yet: their nearest
	// existing parent is watched until they do.
	Paths []string
	// Debounce is how long changes must settle before a rebuild
	// (default 150ms): an editor's save is several events.
	Debounce time.Duration
	// Rebuild loads everything again and swaps it in.
	Rebuild func() error
	// OnError hears a failed rebuild (with its file:line errors).
	OnError func(error)
	// OnReload, if set, hears a successful rebuild.
	OnReload func()
	// Ready, if set, is called once the watches are in place: every
	// change from then on is seen.
	Ready func()
}

// Run watches until ctx ends.
//
// A directory that is removed and made again (a branch switch, a fresh
// checkout) is a new directory to the kernel, whose watch went with the old
// one: after every change Run watches each path again, the path itself if it
// is a directory, the directory of a file, else the nearest existing
// parent, before it rebuilds. So the rebuild reads what the new watches see,
// and no edit falls between them. Of a parent watched for a path that does
// not exist yet, only the changes on the way to that path count.
func Run(ctx context.Context, o Options) error {
	if o.Debounce <= 0 {
		o.Debounce = 150 * time.Millisecond
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	paths := make([]string, len(o.Paths))
	for i, p := range o.Paths {
		paths[i] = filepath.Clean(p)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	watching := map[string]bool{}
	rewatch := func() {
		want := map[string]bool{}
		for _, p := range paths {
			dir := p
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				dir = filepath.Dir(p) // a file: editors replace it, so watch its directory
			}
			for { // the path, or its nearest existing parent
				// Add again even what is watched: the directory may be a
				// new one under the same name (adding is idempotent).
				if fi, err := os.Stat(dir); err == nil && fi.IsDir() && w.Add(dir) == nil {
					want[dir] = true
					break
				}
				parent := filepath.Dir(dir)
				if parent == dir {
					break
				}
				dir = parent
			}
		}
		for dir := range watching {
			if !want[dir] {
				w.Remove(dir) // a parent no longer needed, or a directory gone
			}
		}
		watching = want
	}
	rewatch()
	if o.Ready != nil {
		o.Ready()
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			o.OnError(fmt.Errorf("watch: %w", err))
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if relevant(paths, filepath.Clean(ev.Name)) {
				timer = time.After(o.Debounce)
			}
		case <-timer:
			timer = nil
			rewatch() // directories may have appeared, gone, or come back
			if err := o.Rebuild(); err != nil {
				o.OnError(err)
			} else if o.OnReload != nil {
				o.OnReload()
			}
		}
	}
}

// relevant says whether a change of name concerns a watched path: the path
// itself, a file in it, or a directory on the way to it.
func relevant(paths []string, name string) bool {
	for _, p := range paths {
		if name == p || filepath.Dir(name) == p || strings.HasPrefix(p, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
