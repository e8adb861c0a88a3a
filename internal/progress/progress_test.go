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
