package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// The line is rewritten at most once an interval, and always at the end;
// Done clears it.
func TestMeter(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "reading")
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return clock }
	for _, step := range []struct {
		done  int64
		after time.Duration
		shows bool
	}{
		{1 << 20, 0, true},
		{2 << 20, 10 * time.Millisecond, false},
		{3 << 20, Every, true},
		{10 << 20, time.Millisecond, true}, // the end
	} {
		clock = clock.Add(step.after)
		before := b.Len()
		m.Bytes(step.done, 10<<20)
		if shown := b.Len() > before; shown != step.shows {
			t.Errorf("at %d bytes: shown %v, want %v", step.done, shown, step.shows)
		}
	}
	if !strings.HasSuffix(b.String(), "\r\x1b[Kreading 100% (10.5 of 10.5 MB)") {
		t.Errorf("%q", b.String())
	}
	m.Done()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Errorf("not cleared: %q", b.String())
	}
}

// Not a terminal (a pipe): no meter, and a nil meter says nothing.
func TestQuietWhenPiped(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	m := ForTerminal(w, "reading")
	if m != nil {
		t.Fatal("a meter on a pipe")
	}
	m.Bytes(1, 2)
	m.Done()
}

// Counts and steps: a count at most once an interval and always at the
// end, a step at once.
func TestCountAndSay(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "harness test")
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return clock }
	for _, step := range []struct {
		done  int64
		shows string
	}{{1, "harness test 1/3"}, {2, ""}, {3, "harness test 3/3"}} {
		before := b.Len()
		m.Count(step.done, 3)
		if got := b.String()[before:]; got != "" && got != "\r\x1b[K"+step.shows || (got == "") != (step.shows == "") {
			t.Errorf("at %d: %q, want %q", step.done, got, step.shows)
		}
	}
	m.Say("compiling")
	if !strings.HasSuffix(b.String(), "\r\x1b[Kharness test: compiling") {
		t.Errorf("%q", b.String())
	}
	var nothing *Meter
	nothing.Count(1, 2)
	nothing.Say("x")
}
