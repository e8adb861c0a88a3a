package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentharness/harness/events"
	"github.com/agentharness/harness/internal/browsertest"
)

// colored counts the pixels of a PNG that are neither white, black nor
// grey: the charts' series, bars and marks (the text is grey or black).
func colored(t *testing.T, shot []byte) (n, total int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl), min(r, g, bl)
			if hi-lo > 0x2000 {
				n++
			}
		}
	}
	return n, b.Dx() * b.Dy()
}

// The HTML report opened in a real headless Chromium, from the file and
// nothing else: every chart drawn (the page's script counts them), SVG
// elements in each, a screenshot with the charts' colours, no console
// error (a blocked load would be one, under the page's own
// Content-Security-Policy), and an agent's markup in a tool's name shown
// as text.
func TestHTMLInChromium(t *testing.T) {
	o, _ := small(t)
	// A hostile tool name, charged like any other.
	dl, err := events.OpenDecisionLog(o.Decisions, events.DecisionLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mask *events.Mask
	red, _ := mask.Apply(events.ChargeInput{Role: "coder", Tool: `<img src=x onerror="console.error('xss')">`, Session: "s-x", Agent: "agent-1"})
	if err := dl.Log(events.Entry{DecisionID: "d-x", Path: events.PathCharge, Timestamp: genStart.Add(time.Hour)}, red, events.ChargeResult{Tokens: 90000}); err != nil {
		t.Fatal(err)
	}
	dl.Close()
	r, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := r.WriteHTMLFile(page, made); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	b.Do(t, chromedp.Navigate("file://"+page), chromedp.WaitReady("body[data-rendered]"))
	want := browsertest.Eval[string](t, b, `document.body.dataset.charts`)
	if got := browsertest.Eval[string](t, b, `document.body.dataset.rendered`); got != want || want == "" || want == "0" {
		t.Errorf("the page drew %s charts of %s", got, want)
	}
	for _, tt := range []struct {
		selector string
		atLeast  int
	}{
		{`svg[data-chart="tokens"] polyline`, 1},
		{`svg[data-chart="cost"] polyline`, 1},
		{`svg[data-chart="reasons"] rect`, 1},
		{`svg[data-chart="tools"] rect`, 3},
		{`[data-chart="usage"] svg.usage-bar`, 3},
		{`[data-chart="usage"] line.mark-block`, 1},
	} {
		if n := browsertest.Eval[int](t, b, `document.querySelectorAll(`+strconv.Quote(tt.selector)+`).length`); n < tt.atLeast {
			t.Errorf("%s: %d elements, want at least %d", tt.selector, n, tt.atLeast)
		}
	}
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll("img").length`); n != 0 {
		t.Errorf("the tool's markup made %d <img> elements", n)
	}
	if !browsertest.Eval[bool](t, b, `document.body.textContent.includes('<img src=x onerror=')`) {
		t.Error("the hostile tool's name is not shown as text")
	}
	shot := b.Screenshot(t)
	if dir := os.Getenv("HARNESS_SCREENSHOTS"); dir != "" {
		os.WriteFile(filepath.Join(dir, "report.png"), shot, 0o644)
	}
	if n, total := colored(t, shot); n < total/200 {
		t.Errorf("the screenshot has %d coloured pixels of %d: no charts to see", n, total)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("console errors: %q", p)
	}
}
