package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/internal/browsertest"
)

// The live view in a real headless Chromium, signed in by a token in the
// URL's fragment as the operator: the fragment is cleared, the cookie is
// out of the script's reach, both agents' sessions are listed with their
// budget bars and the warn and block marks, an agent's markup in a
// session id is shown as text, the last refusal is there, a charge moves
// the bar without a reload, a screenshot shows the bars, and the console
// has no error (a Content-Security-Policy violation would be one).
func TestLiveViewInChromium(t *testing.T) {
	f := newFixture(t)
	alice := budget.Key{Agent: "alice", Session: "a-1"}
	f.charge(t, alice, "ctx_read", strings.Repeat("hello world ", 200))
	f.charge(t, budget.Key{Agent: "bob", Session: hostile}, "ctx_read", strings.Repeat("bob's words ", 700))
	f.charge(t, budget.Key{Agent: "bob", Session: hostile}, "ctx_edit", "") // refused

	b := browsertest.New(t)
	b.Do(t, chromedp.Navigate(f.srv.URL+"/ui#token="+operatorToken), chromedp.WaitReady(`body[data-state="live"]`))
	for _, tt := range []struct {
		what, expr string
		want       bool
	}{
		{"the fragment is cleared", `location.hash === "" && !location.href.includes("token")`, true},
		{"the cookie is out of the script's reach", `document.cookie === ""`, true},
		{"two sessions listed", `document.querySelectorAll("#sessions tbody tr").length === 2`, true},
		{"three bars each", `document.querySelectorAll("#sessions tbody .bar").length === 6`, true},
		{"the warn marks", `document.querySelectorAll('.bar[data-dim="tokens"] .mark-warn').length === 2`, true},
		{"the block marks", `document.querySelectorAll('.bar[data-dim="tokens"] .mark-block').length === 2`, true},
		{"the markup is text", `document.querySelector('tr[data-agent="bob"] td.id:nth-child(2)').textContent === ` + jsString(hostile), true},
		{"no element from it", `document.querySelectorAll("img").length === 0`, true},
		{"the refusal", `document.querySelector("#refusals tbody tr") !== null && document.querySelector("#refusals tbody").textContent.includes("ctx_edit")`, true},
	} {
		if got := browsertest.Eval[bool](t, b, tt.expr); got != tt.want {
			t.Errorf("%s: %s is %v", tt.what, tt.expr, got)
		}
	}
	bar := `document.querySelector('tr[data-agent="alice"] .bar[data-dim="tokens"]')`
	before := browsertest.Eval[string](t, b, bar+`.dataset.percent`)
	renders := browsertest.Eval[string](t, b, `document.body.dataset.renders`)

	f.charge(t, alice, "ctx_read", strings.Repeat("hello world ", 2000))
	// The page hears of it by the event stream: wait for the DOM to change.
	b.Do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](bar+`.dataset.percent !== `+jsString(before), chromedp.WithPollingMutation())(ctx, tg)
		return err
	}))
	after := browsertest.Eval[string](t, b, bar+`.dataset.percent`)
	width := browsertest.Eval[string](t, b, bar+`.firstChild.style.width`)
	if !browsertest.Eval[bool](t, b, after+` > `+before) || width != after+"%" {
		t.Errorf("the bar went from %s%% to %s%% (width %s)", before, after, width)
	}
	if browsertest.Eval[string](t, b, `document.body.dataset.renders`) == renders {
		t.Error("no new state was drawn")
	}
	t.Logf("alice's token bar: %s%% → %s%% after a charge", before, after)

	shot := b.Screenshot(t)
	if dir := os.Getenv("HARNESS_SCREENSHOTS"); dir != "" {
		os.WriteFile(filepath.Join(dir, "ui.png"), shot, 0o644)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if max(r, g, bl)-min(r, g, bl) > 0x2000 {
				n++
			}
		}
	}
	if n < 500 {
		t.Errorf("the screenshot has %d coloured pixels: no bars to see", n)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("console errors: %q", p)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
