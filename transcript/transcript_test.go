package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentharness/harness/pricing"
)

// The recorded transcript: a request written as three lines with
// cumulative counts, Claude Code's own synthetic line, a tool result that
// quotes a usage, and a last line still being written.
func fixture(t *testing.T) (whole, partial, rest []byte) {
	t.Helper()
	whole, err := os.ReadFile("testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	partial, err = os.ReadFile("testdata/session-partial.txt")
	if err != nil {
		t.Fatal(err)
	}
	return whole, partial, []byte("stamp\":\"2026-12-01T10:00:08.000Z\"}\n")
}

var (
	req1 = pricing.Usage{Input: 3, CacheWrite: 4000, CacheRead: 20000, Output: 310}
	req2 = pricing.Usage{Input: 5, CacheWrite1h: 500, CacheRead: 24000, Output: 80}
	req3 = pricing.Usage{Input: 2, CacheRead: 24500, Output: 12}
)

func ids(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.ID)
	}
	return out
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
}

// Each request is counted once, at its largest counts; Claude Code's
// synthetic lines and lines that only quote a usage are not requests; a
// line being written is read once it is whole.
func TestRead(t *testing.T) {
	t.Parallel()
	whole, partial, rest := fixture(t)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeFile(t, path, append(slices.Clone(whole), partial...))
	reqs, c, n, err := Read(path, Cursor{}, 1<<20, DefaultLimits, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].ID != "req_01" || reqs[0].Model != "claude-sonnet-4-5-20250929" || reqs[0].Now != req1 || reqs[0].Prev != (pricing.Usage{}) ||
		reqs[1].ID != "req_02" || reqs[1].Model != "claude-opus-4-5-20251101" || reqs[1].Now != req2 {
		t.Fatalf("requests %+v", reqs)
	}
	if c.Offset != int64(len(whole)) || n != int64(len(whole)+len(partial)) {
		t.Errorf("offset %d, read %d: the line being written must be read again", c.Offset, n)
	}
	// Nothing new: nothing counted.
	if again, c2, _, _ := Read(path, c, 1<<20, DefaultLimits, nil); len(again) != 0 || c2.Offset != c.Offset {
		t.Errorf("read again: %+v", again)
	}
	appendFile(t, path, rest)
	reqs, c, _, err = Read(path, c, 1<<20, DefaultLimits, nil)
	if err != nil || !slices.Equal(ids(reqs), []string{"req_03"}) || reqs[0].Now != req3 {
		t.Fatalf("after the line ended: %+v %v", reqs, err)
	}
	if fi, _ := os.Stat(path); c.Offset != fi.Size() {
		t.Errorf("offset %d of %d", c.Offset, fi.Size())
	}
}

// Read in small pieces, the lines of a request split between reads: the
// later reads count only what its counts grew by, and the total is its
// largest counts, whatever the size of the pieces.
func TestReadInPieces(t *testing.T) {
	t.Parallel()
	whole, _, _ := fixture(t)
	for _, budget := range []int64{800, 1000, 1500, 4096} {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		writeFile(t, path, whole)
		var c Cursor
		total := map[string]pricing.Usage{}
		for range 100 {
			reqs, next, _, err := Read(path, c, budget, Limits{Bytes: budget, Line: 1 << 20}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reqs {
				if r.Prev != total[r.ID] {
					t.Errorf("budget %d: %s counted before as %+v, now said to be %+v", budget, r.ID, total[r.ID], r.Prev)
				}
				total[r.ID] = r.Now
			}
			if next.Offset == c.Offset && len(reqs) == 0 {
				break
			}
			c = next
		}
		if len(total) != 2 || total["req_01"] != req1 || total["req_02"] != req2 {
			t.Errorf("budget %d: %+v", budget, total)
		}
	}
}

// A file replaced (another inode) or cut short is read from its start:
// the requests counted before are not counted again, and the new ones are.
func TestReadReplaced(t *testing.T) {
	t.Parallel()
	whole, partial, rest := fixture(t)
	complete := append(append(slices.Clone(whole), partial...), rest...)
	for _, tt := range []struct {
		name    string
		replace func(t *testing.T, path string)
	}{
		{"replaced by a copy with more", func(t *testing.T, path string) {
			tmp := path + ".new"
			writeFile(t, tmp, complete)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short and written again", func(t *testing.T, path string) {
			writeFile(t, path, whole[bytes.IndexByte(whole, '\n')+1:]) // shorter, same inode
			appendFile(t, path, append(slices.Clone(partial), rest...))
		}},
		{"truncated to nothing", func(t *testing.T, path string) { writeFile(t, path, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "s.jsonl")
			writeFile(t, path, whole)
			counted := map[string]bool{}
			seen := func(id string) bool { return counted[id] }
			reqs, c, _, err := Read(path, Cursor{}, 1<<20, DefaultLimits, seen)
			if err != nil || len(reqs) != 2 {
				t.Fatalf("%+v %v", reqs, err)
			}
			for _, r := range reqs {
				counted[r.ID] = true
			}
			tt.replace(t, path)
			reqs, _, _, err = Read(path, c, 1<<20, DefaultLimits, seen)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"req_03"}
			if tt.name == "truncated to nothing" {
				want = nil
			}
			if !slices.Equal(ids(reqs), want) {
				t.Errorf("after: %v, want %v", ids(reqs), want)
			}
		})
	}
}

// What a hostile agent can write into its transcript is bounded: a line
// too long is skipped (even one longer than a read, ending in a later
// one), and so are lines that are not JSON, counts no request has, and
// lines of another type that mention "assistant"; a read takes at most
// its budget.
func TestReadHostile(t *testing.T) {
	t.Parallel()
	lim := Limits{Bytes: 1 << 20, Line: 4096}
	good := `{"type":"assistant","requestId":"req_ok","message":{"model":"claude-haiku-4-5","usage":{"input_tokens":10,"output_tokens":5}}}` + "\n"
	huge := `{"type":"assistant","requestId":"req_huge","message":{"model":"m","usage":{"input_tokens":1,"output_tokens":1}},"pad":"` + strings.Repeat("x", 3<<20) + `"}` + "\n"
	lines := []string{
		huge,
		"not json at all, but \"assistant\"\n",
		`{"type":"assistant","requestId":"req_neg","message":{"model":"m","usage":{"input_tokens":-5}}}` + "\n",
		`{"type":"assistant","requestId":"req_big","message":{"model":"m","usage":{"output_tokens":1e30}}}` + "\n",
		`{"type":"assistant","requestId":"req_frac","message":{"model":"m","usage":{"output_tokens":1.5}}}` + "\n",
		`{"type":"assistant","requestId":"req_str","message":{"model":"m","usage":{"output_tokens":"7"}}}` + "\n",
		`{"type":"user","requestId":"req_user","message":{"model":"m","role":"assistant","usage":{"output_tokens":7}}}` + "\n",
		`{"type":"assistant","message":{"model":"m","usage":{"output_tokens":7}}}` + "\n", // no id at all
		good,
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeFile(t, path, []byte(strings.Join(lines, "")))
	var c Cursor
	var got []string
	reads := 0
	for ; reads < 20; reads++ {
		reqs, next, n, err := Read(path, c, lim.Bytes, lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n > lim.Bytes {
			t.Fatalf("read %d bytes, more than the budget", n)
		}
		got = append(got, ids(reqs)...)
		if next.Offset == c.Offset {
			break
		}
		c = next
	}
	if !slices.Equal(got, []string{"req_ok"}) || reads < 3 {
		t.Errorf("requests %v in %d reads", got, reads)
	}
}

// Validate reads only a .jsonl file under the home directory, never
// through a link out of it; Read refuses what is not a regular file, and
// never waits on a FIFO.
func TestValidateAndOpen(t *testing.T) {
	t.Parallel()
	home, outside := t.TempDir(), t.TempDir()
	projects := filepath.Join(home, ".claude", "projects", "app")
	os.MkdirAll(projects, 0o700)
	inside := filepath.Join(projects, "s.jsonl")
	writeFile(t, inside, nil)
	writeFile(t, filepath.Join(outside, "s.jsonl"), nil)
	os.Symlink(filepath.Join(outside, "s.jsonl"), filepath.Join(projects, "link.jsonl"))
	os.Symlink(outside, filepath.Join(projects, "dirlink"))
	fifo := filepath.Join(projects, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, err string
	}{
		{inside, ""},
		{filepath.Join(outside, "s.jsonl"), "outside the home directory"},
		{filepath.Join(projects, "link.jsonl"), "outside the home directory"},
		{filepath.Join(projects, "dirlink", "s.jsonl"), "outside the home directory"},
		{filepath.Join(projects, "..", "..", "..", "..", filepath.Base(outside), "s.jsonl"), "outside the home directory"},
		{"/dev/zero", "not a .jsonl file"},
		{filepath.Join(projects, "s.txt"), "not a .jsonl file"},
		{"s.jsonl", "not absolute"},
		{filepath.Join(projects, "missing.jsonl"), "no such file"},
		{fifo, ""}, // a FIFO is a path like any: Read refuses it
	} {
		_, err := Validate(tt.path, home)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Validate(%s): %v, want %q", tt.path, err, tt.err)
		}
	}
	if _, _, _, err := Read(fifo, Cursor{}, 1<<20, DefaultLimits, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
	if _, _, _, err := Read(filepath.Join(projects, "link.jsonl"), Cursor{}, 1<<20, DefaultLimits, nil); err == nil {
		t.Error("Read followed a link")
	}
	if _, err := Validate(inside, ""); err == nil {
		t.Error("no home directory, and a transcript was read")
	}
}
