// Package transcript reads what a coding agent records of its own model
// usage: Claude Code's session transcript (the JSONL file whose path every
// hook payload carries, transcript_path), whose "assistant" lines give each
// model request's usage (input, output, cache writes and reads) and model.
// It reads only what is new since the last read, keeps a cursor per file
// and what it has counted of each request in a book in the state
// directory, and hands the new usage to the governor, which prices and
// charges it. It decides nothing.
//
// The transcript is the agent's to write (it runs as the same user), so it
// is read as hostile input: only a regular .jsonl file under the user's
// home directory, never a link out of it, a FIFO or a device; at most
// Limits.Bytes a call and Limits.Line a line (a longer line is skipped);
// a line being written is read the next time; a replaced or truncated file
// is read again from its start, and a request already counted (by its id)
// is not counted again. What it reads can only add to a session's cost:
// the governor charges the larger of it and the estimate of the tool
// calls.
package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/pricing"
)

// Limits bound one read.
type Limits struct {
	// Bytes is the most read of all of a session's files in one call; the
	// rest waits for the next call.
	Bytes int64
	// Line is the longest line read; a longer one is skipped.
	Line int
}

// DefaultLimits read 8 MiB a call and lines of at most 1 MiB.
var DefaultLimits = Limits{Bytes: 8 << 20, Line: 1 << 20}

// Request is one model request's usage: what its lines said before (Prev,
// what was counted of it already) and now (Now, the largest of its counts).
// Its cost to charge is the cost of Now less that of Prev.
type Request struct {
	ID, Model string
	Prev, Now pricing.Usage
}

// Cursor is where a file was read up to.
type Cursor struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Offset int64  `json:"offset"`
	// Skipping is true in the middle of a line too long to read: what
	// follows up to its end is skipped.
	Skipping bool `json:"skipping,omitempty"`
	// Tail is a hash of the bytes just before Offset: a file written
	// again in place (the same inode, no shorter) no longer has them.
	Tail string `json:"tail,omitempty"`
	// Recent are the last requests counted, with what was counted of each:
	// a request's lines repeat its usage (cumulative), and its next lines
	// count only their increase.
	Recent []Counted `json:"recent,omitempty"`
}

// Counted is what was counted of a request.
type Counted struct {
	ID    string        `json:"id"`
	Model string        `json:"model"`
	Usage pricing.Usage `json:"usage"`
}

// maxRecent is how many requests a cursor remembers.
const maxRecent = 16

// maxTokens bounds one count of a line: a larger one is not a real
// request's, and the line is ignored.
const maxTokens = 1 << 40

// Validate checks that path may be read as a transcript of a user whose
// home directory is home: an absolute path to a .jsonl file that, with its
// links resolved, is under home. It returns the resolved path.
func Validate(path, home string) (string, error) {
	switch {
	case home == "":
		return "", errors.New("no home directory to read transcripts under")
	case !filepath.IsAbs(path):
		return "", fmt.Errorf("transcript path %q is not absolute", path)
	case !strings.HasSuffix(path, ".jsonl"):
		return "", fmt.Errorf("transcript path %q is not a .jsonl file", path)
	}
	outside := fmt.Errorf("transcript %q is outside the home directory: not read", path)
	under := func(dir, p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && filepath.IsLocal(rel)
	}
	if !under(filepath.Clean(home), filepath.Clean(path)) {
		return "", outside
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("transcript %q: not read: %w", path, err)
	}
	if !under(realHome, real) { // through a link
		return "", outside
	}
	return real, nil
}

// open opens path for reading as a regular file, without following a
// link and without waiting on a FIFO.
func open(path string) (*os.File, *syscall.Stat_t, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok {
		f.Close()
		return nil, nil, fmt.Errorf("transcript %q is not a regular file: not read", path)
	}
	return f, st, nil
}

// Read reads what is new in the file at path (resolved by Validate) since
// c, at most budget bytes (at least lim.Line, for a whole line to fit), and
// returns the requests whose usage grew, the
// cursor after them and the bytes read. A line not yet ended is left for
// the next read. A file that is not the one c was read from (another
// inode), or is shorter than c's offset, is read from its start: seen
// reports whether a request id was counted before (in any file), and such
// a request, unless one of c's recent ones, is not counted again.
func Read(path string, c Cursor, budget int64, lim Limits, seen func(id string) bool) ([]Request, Cursor, int64, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, c, 0, err
	}
	defer f.Close()
	if uint64(st.Dev) != c.Dev || st.Ino != c.Ino || st.Size < c.Offset || tail(f, c.Offset) != c.Tail {
		// Another file, or this one cut short or written again: from its
		// start, the requests counted before kept out by their ids.
		c = Cursor{Dev: uint64(st.Dev), Ino: st.Ino, Recent: c.Recent}
	}
	want := min(st.Size-c.Offset, budget)
	if want <= 0 {
		return nil, c, 0, nil
	}
	buf := make([]byte, want)
	n, err := io.ReadFull(io.NewSectionReader(f, c.Offset, want), buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, c, 0, err
	}
	buf = buf[:n]
	var out []Request
	index := map[string]int{}
	pos := 0
	for pos < len(buf) {
		end := bytes.IndexByte(buf[pos:], '\n')
		if end < 0 {
			// A line not yet ended: read it the next time, unless it is
			// already too long, or is being skipped.
			rest := len(buf) - pos
			if c.Skipping || rest > lim.Line {
				c.Offset += int64(rest)
				c.Skipping = true
				pos = len(buf)
			}
			break
		}
		line := buf[pos : pos+end]
		pos += end + 1
		c.Offset += int64(end + 1)
		if c.Skipping { // the end of a line too long to read
			c.Skipping = false
			continue
		}
		if len(line) > lim.Line {
			continue
		}
		r, ok := parse(line)
		if !ok {
			continue
		}
		i := recentIndex(c.Recent, r.ID)
		if i < 0 && seen != nil && seen(r.ID) {
			continue // counted before, in this file before it was replaced or in another
		}
		prev := pricing.Usage{}
		if i >= 0 {
			prev = c.Recent[i].Usage
			c.Recent = append(c.Recent[:i], c.Recent[i+1:]...)
		}
		now := maxUsage(prev, r.Usage)
		c.Recent = append(c.Recent, Counted{ID: r.ID, Model: r.Model, Usage: now})
		if len(c.Recent) > maxRecent {
			c.Recent = c.Recent[len(c.Recent)-maxRecent:]
		}
		if now == prev {
			continue
		}
		if j, ok := index[r.ID]; ok { // a request seen twice in one read
			out[j].Now = now
			continue
		}
		index[r.ID] = len(out)
		out = append(out, Request{ID: r.ID, Model: r.Model, Prev: prev, Now: now})
	}
	c.Tail = tail(f, c.Offset)
	return out, c, int64(n), nil
}

// tailBytes is how much of the file before the offset Tail covers.
const tailBytes = 64

// tail is the hash of the tailBytes of f before offset ("" at 0).
func tail(f *os.File, offset int64) string {
	if offset <= 0 {
		return ""
	}
	start := max(offset-tailBytes, 0)
	b := make([]byte, offset-start)
	if _, err := f.ReadAt(b, start); err != nil {
		return "unreadable"
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func recentIndex(recent []Counted, id string) int {
	for i, r := range recent {
		if r.ID == id {
			return i
		}
	}
	return -1
}

func maxUsage(a, b pricing.Usage) pricing.Usage {
	return pricing.Usage{Input: max(a.Input, b.Input), Output: max(a.Output, b.Output),
		CacheWrite: max(a.CacheWrite, b.CacheWrite), CacheWrite1h: max(a.CacheWrite1h, b.CacheWrite1h), CacheRead: max(a.CacheRead, b.CacheRead)}
}

// line is one request's usage as one line records it.
type line struct {
	ID, Model string
	Usage     pricing.Usage
}

// parse reads an "assistant" line's request: its id (requestId, else the
// message's id, else the line's uuid), model and usage. Lines of other
// types, of Claude Code's own "synthetic" model, without usage or with
// counts no request has are not requests.
func parse(raw []byte) (line, bool) {
	if !bytes.Contains(raw, []byte(`"assistant"`)) || !gjson.ValidBytes(raw) {
		return line{}, false
	}
	p := gjson.ParseBytes(raw)
	if p.Get("type").String() != "assistant" {
		return line{}, false
	}
	m := p.Get("message")
	u := m.Get("usage")
	model := m.Get("model").String()
	if !u.IsObject() || model == "" || strings.Contains(model, "synthetic") {
		return line{}, false
	}
	id := p.Get("requestId").String()
	for _, alt := range []gjson.Result{m.Get("id"), p.Get("uuid")} {
		if id == "" {
			id = alt.String()
		}
	}
	if id == "" {
		return line{}, false
	}
	count := func(r gjson.Result) (int64, bool) {
		if !r.Exists() || r.Type == gjson.Null {
			return 0, true
		}
		if r.Type != gjson.Number || r.Num < 0 || r.Num > maxTokens || r.Num != float64(int64(r.Num)) {
			return 0, false
		}
		return int64(r.Num), true
	}
	var us pricing.Usage
	var writes int64
	ok := true
	for _, f := range []struct {
		dst *int64
		key string
	}{
		{&us.Input, "input_tokens"}, {&us.Output, "output_tokens"}, {&writes, "cache_creation_input_tokens"},
		{&us.CacheRead, "cache_read_input_tokens"}, {&us.CacheWrite, "cache_creation.ephemeral_5m_input_tokens"},
		{&us.CacheWrite1h, "cache_creation.ephemeral_1h_input_tokens"},
	} {
		n, good := count(u.Get(f.key))
		ok = ok && good
		*f.dst = n
	}
	if !ok {
		return line{}, false
	}
	// Cache writes not split by lifetime are 5-minute ones.
	if rest := writes - us.CacheWrite - us.CacheWrite1h; rest > 0 {
		us.CacheWrite += rest
	}
	return line{ID: id, Model: model, Usage: us}, true
}
