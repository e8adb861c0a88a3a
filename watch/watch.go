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
}

// Run watches until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Debounce <= 0 {
		o.Debounce = 150 * time.Millisecond
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	watched := map[string]bool{}
	addAll := func() {
		for _, p := range o.Paths {
			dir := p
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				dir = filepath.Dir(p) // a file: editors replace it, so watch its directory
			}
			for { // the path, or its nearest existing parent
				if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
					if !watched[dir] && w.Add(dir) == nil {
						watched[dir] = true
					}
					break
				}
				parent := filepath.Dir(dir)
				if parent == dir {
					break
				}
				dir = parent
			}
		}
	}
	addAll()
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
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			timer = time.After(o.Debounce)
		case <-timer:
			timer = nil
			addAll() // directories may have appeared
			if err := o.Rebuild(); err != nil {
				o.OnError(err)
			} else if o.OnReload != nil {
				o.OnReload()
			}
		}
	}
}
