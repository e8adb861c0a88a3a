package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentharness/harness/internal/flock"
	"github.com/agentharness/harness/pricing"
)

// Tally is a session's cost from its two sources: what the estimate of its
// tool calls came to, and what the usage its agent recorded came to at the
// models' prices. The session is charged the larger of the two, so that
// neither is charged on top of the other, and a transcript can only raise
// the charge.
type Tally struct {
	EstimateMicros int64 `json:"estimate_micros"`
	RealMicros     int64 `json:"real_micros"`
	// Requests is how many model requests were counted.
	Requests int64 `json:"requests"`
	// Transcript is the file last read ("" when none was).
	Transcript string `json:"transcript,omitempty"`
}

// Charged is what the session has been charged: the larger of the two.
func (t Tally) Charged() int64 { return max(t.EstimateMicros, t.RealMicros) }

// Sources of a session's cost.
const (
	SourceTranscript = "transcript" // the usage the agent recorded, at the models' prices
	SourceEstimate   = "estimate"   // the tokens of its tool calls
)

// Source is where the session's cost comes from: the transcript when its
// cost is at least the estimate's, else the estimate.
func (t Tally) Source() string {
	if t.RealMicros > 0 && t.RealMicros >= t.EstimateMicros {
		return SourceTranscript
	}
	return SourceEstimate
}

// state is what the book keeps of a session: its tally and a cursor per
// file read.
type state struct {
	Tally
	Files map[string]Cursor `json:"files,omitempty"`
}

// maxFiles bounds the files a session's state keeps cursors of.
const maxFiles = 64

// maxIDs bounds the ids a session remembers (8 bytes each): past it, a
// request of a replaced file may be counted twice (never less).
const maxIDs = 1 << 16

// Book keeps, in a directory of its own (in the state directory), what
// has been read of each session's transcripts and its tally. Each session
// is updated under a lock (flock), so that the hook's processes and the
// daemon, answering at once, read and charge each line once.
type Book struct {
	dir, home string
	limits    Limits
}

// Open returns the book in dir for a user whose home directory is home
// (only transcripts under it are read).
func Open(dir, home string, l Limits) *Book {
	if l.Bytes <= 0 {
		l.Bytes = DefaultLimits.Bytes
	}
	if l.Line <= 0 {
		l.Line = DefaultLimits.Line
	}
	l.Bytes = max(l.Bytes, int64(l.Line)) // a whole line fits in a read
	return &Book{dir: dir, home: home, limits: l}
}

// name is the file name of a session's files: a hash of its key, which is
// the agent's to choose.
func name(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// Tally returns the tally of the session key; ok is false when the book
// has none.
func (b *Book) Tally(key string) (Tally, bool, error) {
	st, _, err := b.load(filepath.Join(b.dir, name(key)+".json"))
	if err != nil || st.Files == nil && st.Tally == (Tally{}) {
		return Tally{}, false, err
	}
	return st.Tally, true, nil
}

// Update reads what is new in the session's transcript at path ("" for
// none) and in its subagents' (the .jsonl files of the directory
// <path without .jsonl>/subagents), and calls f with the requests whose
// usage grew and the session's tally, under the session's lock. What f
// leaves in the tally is kept, and the files are marked read, only when it
// returns nil: a charge that failed is read again the next time. A path
// that may not be read (see Validate) is not read: f is called without
// requests, and the error says why. It returns the tally after.
func (b *Book) Update(key, path string, f func(reqs []Request, t *Tally) error) (Tally, error) {
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return Tally{}, err
	}
	base := filepath.Join(b.dir, name(key))
	unlock, err := lock(base + ".lock")
	if err != nil {
		return Tally{}, err
	}
	defer unlock()
	st, saved, err := b.load(base + ".json")
	if err != nil {
		return Tally{}, err
	}
	if st.Files == nil {
		st.Files = map[string]Cursor{}
	}
	var reqs []Request
	var readErr error
	var ids *idSet
	if path != "" {
		var real string
		if real, readErr = Validate(path, b.home); readErr == nil {
			if ids, readErr = loadIDs(base + ".ids"); readErr == nil {
				reqs, readErr = b.read(real, &st, ids)
			}
		}
		if readErr == nil {
			st.Transcript = path
		}
	}
	if err := f(reqs, &st.Tally); err != nil {
		return st.Tally, err
	}
	for _, r := range reqs {
		if r.Prev == (pricing.Usage{}) {
			st.Requests++
		}
	}
	if ids != nil {
		if err := ids.save(base + ".ids"); err != nil {
			return st.Tally, err
		}
	}
	if err := save(base+".json", st, saved); err != nil {
		return st.Tally, err
	}
	return st.Tally, readErr
}

// read reads the transcript at real and those of its subagents into st,
// within the book's limits, and returns the requests whose usage grew.
func (b *Book) read(real string, st *state, ids *idSet) ([]Request, error) {
	files := []string{real}
	if sub, err := filepath.Glob(filepath.Join(strings.TrimSuffix(real, ".jsonl"), "subagents", "*.jsonl")); err == nil {
		slices.Sort(sub)
		for _, p := range sub {
			if len(files) >= maxFiles {
				break
			}
			if r, err := Validate(p, b.home); err == nil {
				files = append(files, r)
			}
		}
	}
	budget := b.limits.Bytes
	var out []Request
	var firstErr error
	for _, p := range files {
		if budget <= 0 {
			break
		}
		c, known := st.Files[p]
		if !known && len(st.Files) >= maxFiles {
			continue
		}
		reqs, next, n, err := Read(p, c, budget, b.limits, ids.has)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		budget -= n
		st.Files[p] = next
		for _, r := range reqs {
			ids.add(r.ID)
		}
		out = append(out, reqs...)
	}
	return out, firstErr
}

// load reads a session's state; none is an empty one.
func (b *Book) load(path string) (state, []byte, error) {
	var st state
	raw, err := readRegular(path, 8<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil, nil
	}
	if err != nil {
		return st, nil, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		// The agent's to break, as the same user: start the cursors again
		// (ids keep requests from being counted twice), but keep what was
		// charged out of reach: the ledger holds it.
		return state{}, raw, nil
	}
	return st, raw, nil
}

// save writes st atomically, 0600, unless the file holds it already
// (saved, its text as loaded: most calls of a turn find the transcript as
// the last one left it).
func save(path string, st state, saved []byte) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if saved != nil && bytes.Equal(raw, saved) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readRegular reads at most limit bytes of a regular file, not through a
// link.
func readRegular(path string, limit int64) ([]byte, error) {
	f, _, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// lock takes the exclusive lock of path (created 0600) and returns its
// release.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock.Lock(f); err != nil { // not in the kernel (see package flock)
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		flock.Unlock(f)
		f.Close()
	}, nil
}

// idSet is the ids of the requests a session has counted, as 64-bit
// hashes, kept in an append-only file of 8-byte entries.
type idSet struct {
	have  map[uint64]bool
	added []uint64
	full  bool
}

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

func loadIDs(path string) (*idSet, error) {
	s := &idSet{have: map[uint64]bool{}}
	raw, err := readRegular(path, 8*maxIDs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for len(raw) >= 8 {
		s.have[binary.LittleEndian.Uint64(raw)] = true
		raw = raw[8:]
	}
	s.full = len(s.have) >= maxIDs
	return s, nil
}

func (s *idSet) has(id string) bool { return s.have[hashID(id)] }

func (s *idSet) add(id string) {
	h := hashID(id)
	if s.have[h] || s.full {
		return
	}
	s.have[h] = true
	s.added = append(s.added, h)
	s.full = len(s.have) >= maxIDs
}

// save appends the ids added.
func (s *idSet) save(path string) error {
	if len(s.added) == 0 {
		return nil
	}
	var b bytes.Buffer
	for _, h := range s.added {
		binary.Write(&b, binary.LittleEndian, h)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	s.added = nil
	return f.Close()
}
