// Package progress shows how far a long task got, on one line of a
// terminal that it rewrites, and nothing at all when its output is not a
// terminal (piped, redirected to a file, or in CI): a script's stderr gets
// no carriage returns to wade through.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Meter reports progress on one line. The zero of it, and nil, report
// nothing; it is safe for concurrent use.
type Meter struct {
	w     io.Writer
	label string
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	last  time.Time
	shown bool
}

// Every is how often at most the line is rewritten.
const Every = 100 * time.Millisecond

// ForTerminal returns a meter on f if f is a terminal, else nil (which
// reports nothing).
func ForTerminal(f *os.File, label string) *Meter {
	if f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return New(f, label)
}

// New returns a meter that writes to w whatever w is.
func New(w io.Writer, label string) *Meter {
	return &Meter{w: w, label: label, every: Every, now: time.Now}
}

// Bytes reports done of total bytes: the line says the percentage and
// the megabytes, at most once every Every (and always the first time and
// at the end).
func (m *Meter) Bytes(done, total int64) {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.shown && done < total && now.Sub(m.last) < m.every {
		return
	}
	m.last, m.shown = now, true
	pct := int64(100)
	if total > 0 {
		pct = min(done*100/total, 100)
	}
	fmt.Fprintf(m.w, "\r\x1b[K%s %3d%% (%.1f of %.1f MB)", m.label, pct, float64(done)/1e6, float64(total)/1e6)
}

// Count reports done of total items (roles written, tests run), at most
// once every Every (and always the first time and at the end).
func (m *Meter) Count(done, total int64) {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.shown && done < total && now.Sub(m.last) < m.every {
		return
	}
	m.last, m.shown = now, true
	fmt.Fprintf(m.w, "\r\x1b[K%s %d/%d", m.label, done, total)
}

// Say shows the label and what is under way now (a step without a
// count), at once.
func (m *Meter) Say(what string) {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last, m.shown = m.now(), true
	fmt.Fprintf(m.w, "\r\x1b[K%s: %s", m.label, what)
}

// Done clears the line, if anything was shown.
func (m *Meter) Done() {
	if m == nil || m.w == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shown {
		fmt.Fprint(m.w, "\r\x1b[K")
		m.shown = false
	}
}
