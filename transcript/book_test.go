package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// a home with a Claude Code transcript (the fixture, its last line whole)
// and the book in its state directory.
func bookFixture(t *testing.T) (b *Book, home, path string) {
	t.Helper()
	home = t.TempDir()
	whole, partial, rest := fixture(t)
	dir := filepath.Join(home, ".claude", "projects", "-home-dev-app")
	os.MkdirAll(dir, 0o700)
	path = filepath.Join(dir, "sess-1.jsonl")
	writeFile(t, path, append(append(slices.Clone(whole), partial...), rest...))
	return Open(filepath.Join(home, ".local", "state", "lean-ctx", "harness", "transcripts"), home, DefaultLimits), home, path
}

// Calls of many processes at once (the hook's, the daemon's) count each
// request once between them.
func TestBookCountsOnceAtOnce(t *testing.T) {
	t.Parallel()
	b, _, path := bookFixture(t)
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, err := b.Update("claude-code/sess-1", path, func(reqs []Request, tl *Tally) error {
				mu.Lock()
				all = append(all, ids(reqs)...)
				mu.Unlock()
				tl.RealMicros += int64(len(reqs))
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	slices.Sort(all)
	if !slices.Equal(all, []string{"req_01", "req_02", "req_03"}) {
		t.Errorf("counted %v", all)
	}
	tl, ok, err := b.Tally("claude-code/sess-1")
	if !ok || err != nil || tl.RealMicros != 3 || tl.Requests != 3 || tl.Transcript != path {
		t.Errorf("tally %+v %v %v", tl, ok, err)
	}
	// The book's files are the user's alone.
	files, _ := filepath.Glob(filepath.Join(b.dir, "*"))
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", f, fi.Mode())
		}
	}
}

// A charge that failed leaves the lines unread: the next call counts them.
func TestBookFailedChargeReadAgain(t *testing.T) {
	t.Parallel()
	b, _, path := bookFixture(t)
	boom := errors.New("ledger down")
	if _, err := b.Update("k", path, func([]Request, *Tally) error { return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	var got []string
	b.Update("k", path, func(reqs []Request, _ *Tally) error { got = ids(reqs); return nil })
	if len(got) != 3 {
		t.Errorf("after a failed charge: %v", got)
	}
}

// The book's state broken (the agent can write it) starts the cursors
// again, and a request counted before is still not counted twice; the
// subagents' transcripts beside the session's are read too; a transcript
// that may not be read is not, and f still runs.
func TestBookHostileAndSubagents(t *testing.T) {
	t.Parallel()
	b, home, path := bookFixture(t)
	count := func(p string) ([]string, error) {
		var got []string
		_, err := b.Update("k", p, func(reqs []Request, _ *Tally) error { got = ids(reqs); return nil })
		return got, err
	}
	if got, err := count(path); len(got) != 3 || err != nil {
		t.Fatalf("%v %v", got, err)
	}
	writeFile(t, filepath.Join(b.dir, name("k")+".json"), []byte("{broken"))
	if got, err := count(path); len(got) != 0 || err != nil {
		t.Errorf("after the state broke: %v %v", got, err)
	}
	sub := filepath.Join(filepath.Dir(path), "sess-1", "subagents")
	os.MkdirAll(sub, 0o700)
	writeFile(t, filepath.Join(sub, "agent-a1.jsonl"), []byte(`{"type":"assistant","requestId":"req_sub","message":{"model":"claude-haiku-4-5-20251001","usage":{"input_tokens":10,"output_tokens":5}}}`+"\n"))
	if got, err := count(path); !slices.Equal(got, []string{"req_sub"}) || err != nil {
		t.Errorf("a subagent's: %v %v", got, err)
	}
	ran := false
	_, err := b.Update("k", "/etc/passwd.jsonl", func(reqs []Request, _ *Tally) error { ran = len(reqs) == 0; return nil })
	if err == nil || !ran {
		t.Errorf("outside the home: %v, f ran %v", err, ran)
	}
	// A FIFO in place of the book's ids: the transcript goes unread, the call goes on.
	ids := filepath.Join(b.dir, name("fifo")+".ids")
	os.MkdirAll(b.dir, 0o700)
	if err := syscall.Mkfifo(ids, 0o600); err != nil {
		t.Skip(err)
	}
	ran = false
	if _, err := b.Update("fifo", path, func([]Request, *Tally) error { ran = true; return nil }); err == nil || !ran {
		t.Errorf("ids a FIFO: %v, f ran %v", err, ran)
	}
	_ = home
}
