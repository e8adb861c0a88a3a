// Package browsertest opens pages in a real headless Chromium for tests,
// driven over the DevTools protocol with chromedp, and collects what the
// page reports on its console and as uncaught exceptions. A test that
// needs the browser fails, never skips, when Chromium is missing: the
// Makefile's tools step installs it ($HARNESS_CHROMIUM names another).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is the Chromium to run: $HARNESS_CHROMIUM, else chromium on PATH,
// else Debian's /usr/bin/chromium; "" when there is none.
func Path() string {
	if p := os.Getenv("HARNESS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is a tab of a headless Chromium of the test's own, with a
// profile in a temporary directory and no network of its own (no
// background requests, updates, sync).
type Browser struct {
	// Ctx is the tab's; derive a deadline from it for each action.
	Ctx context.Context

	mu       sync.Mutex
	problems []string
}

// New starts Chromium for t (failing t when there is none) and opens a
// tab; the browser ends with the test.
func New(t *testing.T) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		t.Fatal("no Chromium: install Debian's chromium package (make tools does, as root) or set HARNESS_CHROMIUM")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1024),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	b := &Browser{Ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, untimed: a deadline here would end it
		t.Fatalf("starting %s: %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// Do runs the actions on the tab within a deadline.
func (b *Browser) Do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v (console: %v)", err, b.Problems())
	}
}

// Eval evaluates a JavaScript expression on the page, within a deadline.
func Eval[T any](t *testing.T, b *Browser, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluating %s: %v (console: %v)", expression, err, b.Problems())
	}
	return v
}

// Timeout bounds each action: generous, for a machine under load; an
// action that works takes milliseconds.
const Timeout = 60 * time.Second

// Problems are the console errors (a Content-Security-Policy violation is
// one) and uncaught exceptions so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Screenshot is a PNG of the whole page (quality 100 is PNG; below, JPEG).
func (b *Browser) Screenshot(t *testing.T) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return png
}
