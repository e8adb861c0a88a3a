package budget

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/tiktoken-go/tokenizer/codec"
)

// Tokenizer counts o200k_base tokens, the encoding of current frontier
// models, exactly as OpenAI's tiktoken does, with the vocabulary compiled
// into the binary: nothing is downloaded. The vocabulary is loaded on first
// use (tens of milliseconds), so a process that never counts never pays
// for it.
//
// The vocabulary comes from github.com/tiktoken-go/tokenizer, but not its
// splitting of text, which differs from tiktoken's on some white space and
// control characters ("\n \n" is one token, not two; DEL is a token, not
// nothing): the text is split by pieces and each piece byte-pair encoded
// here, several times faster.
type Tokenizer struct {
	once  sync.Once
	ranks ranks
	err   error
	// memos hands each counting a memo of this tokenizer's piece counts
	// (see pieceMemo). Not a sync.Pool: a garbage collection empties a
	// pool, and a gateway collects every few results, so its memos would
	// be new (empty) most of the time.
	memos memoPool
	// encoded bounds the bytes of long pieces a counting byte-pair
	// encodes (maxEncoded when 0; tests make it smaller).
	encoded int
}

// NewTokenizer returns a tokenizer; it is safe for concurrent use.
func NewTokenizer() *Tokenizer { return &Tokenizer{} }

// Count returns the number of o200k_base tokens of s. Bytes that are not
// UTF-8 count as U+FFFD, one each.
func (t *Tokenizer) Count(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t.once.Do(t.load)
	if t.err != nil {
		return 0, t.err
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	cores := min(runtime.GOMAXPROCS(0), len(s)/parallelPart)
	if cores <= 1 {
		return t.count(s), nil
	}
	if len(s) <= cores*t.limit() {
		return t.shared(s, cores), nil
	}
	parts := splitText(s, cores)
	if len(parts) == 1 {
		return t.count(s), nil
	}
	counts := make([]int64, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts[1:] {
		wg.Go(func() { counts[i+1] = t.count(p) })
	}
	counts[0] = t.count(parts[0])
	wg.Wait()
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// shared counts text s on up to cores goroutines that share its chunks
// (of about sharedChunk bytes, cut where pieces end): each takes the next
// chunk left until none is. s is at most cores times the bound on what a
// counting encodes, so that every piece of a chunk within the bound is
// counted exactly (see maxEncoded): the count is the text's, whichever
// goroutine counts which chunk. A chunk past the bound (a text with
// nowhere to cut is one chunk) is held to it, as a text counted whole is.
//
// Why chunks taken in turn rather than a part a core: a goroutine started
// for another core runs once that core's thread is woken, which on these
// shared virtual machines takes 50–100 µs, about what half of a 100 KB
// text takes to count. With a part each, the caller counted its half and
// then waited for the other, and a 100 KB text took as long as on one
// core; with chunks, the caller counts until the other joins in, and
// both count what is left.
func (t *Tokenizer) shared(s string, cores int) int64 {
	chunks := splitText(s, max(len(s)/sharedChunk, 1))
	counts := make([]int64, len(chunks))
	var next atomic.Int64
	work := func() {
		m := t.memos.get()
		defer t.memos.put(m)
		for {
			i := int(next.Add(1)) - 1
			if i >= len(chunks) {
				return
			}
			// A chunk within the bound is encoded whole (exactly); one
			// past it, of a text with nowhere to cut, is held to the
			// bound as count holds a text: no goroutine encodes more.
			counts[i] = t.countIn(m, chunks[i], min(len(chunks[i]), t.limit()))
		}
	}
	var wg sync.WaitGroup
	for range min(cores, len(chunks)) - 1 {
		wg.Go(work)
	}
	// The goroutine just started is this core's next, which another
	// core takes only after waiting for this one to run it (runnext, a
	// sleep of some 50 µs here): it often did not start until this one
	// had counted all. Yielding runs it here at once, and this goroutine
	// goes where an idle core finds it first (the global queue).
	runtime.Gosched()
	work()
	wg.Wait()
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// sharedChunk is about the size of the chunks a text is shared out in
// (see shared): some 20 µs of counting each.
const sharedChunk = 8 << 10

// limit is the bound on the bytes of pieces a counting byte-pair encodes
// (see maxEncoded).
func (t *Tokenizer) limit() int {
	if t.encoded > 0 {
		return t.encoded
	}
	return maxEncoded
}

// count counts the tokens of valid UTF-8 text s (the vocabulary loaded).
// It byte-pair encodes at most maxEncoded bytes of pieces that are not
// tokens whole; past that, such a piece counts a token a byte.
func (t *Tokenizer) count(s string) int64 {
	m := t.memos.get()
	defer t.memos.put(m)
	return t.countIn(m, s, t.limit())
}

// countIn is count with memo m, byte-pair encoding at most left bytes of
// pieces that are not tokens whole.
func (t *Tokenizer) countIn(m *pieceMemo, s string, left int) int64 {
	encode := func(p string) (n int, exact bool) {
		if _, ok := t.ranks[p]; ok {
			return 1, true
		}
		if len(p) > left || len(p) > maxPiece {
			return len(p), false
		}
		left -= len(p)
		if len(p) > longPiece {
			return t.ranks.bpeCountLong(p), true
		}
		return t.ranks.bpeCountShort(p), true
	}
	var n int64
	for i := 0; i < len(s); {
		// pieceAt, with its ASCII shortcut called from here: one call
		// a piece fewer, a fifth of the time of ASCII text.
		size, ascii := 0, false
		if s[i] < 0x80 {
			size, ascii = asciiPieceAt(s, i)
		}
		if !ascii {
			size = generalPieceAt(s, i)
		}
		c := 0
		if size <= 8 && i+8 <= len(s) { // most pieces
			k := shortKey(s, i, size).first
			slot, kept, ok := m.findShort(k, size)
			if c = kept; !ok {
				var exact bool
				if c, exact = encode(s[i : i+size]); exact {
					slot.keep(k, size, c)
				}
			}
		} else if size <= memoPiece {
			k := keyOf(s, i, size)
			slot, kept, ok := m.find(k, size)
			if c = kept; !ok {
				var exact bool
				if c, exact = encode(s[i : i+size]); exact {
					slot.keep(k, size, c)
				}
			}
		} else {
			c, _ = encode(s[i : i+size])
		}
		n += int64(c)
		i += size
	}
	return n
}

// longPiece is the length past which a piece is byte-pair encoded by
// bpeCountLong.
const longPiece = 64

// maxEncoded bounds the bytes one counting (one part of a text, on one
// core) byte-pair encodes, of pieces that are neither tokens whole nor
// in the memo: about a second's work. Encoding takes 0.15–0.6 µs a byte
// (more for longer pieces), so a text of pieces no vocabulary holds, such
// as words or runs of random letters, which an upstream or an agent can
// write, would take seconds a megabyte of them, and a hook call that
// outlasts its deadline is not charged. Ordinary text stays well within:
// 32 MiB of Go source encodes 1.3 MiB of such pieces, prose less. Past the
// bound such a piece counts a token a byte, more than any encoding of it:
// the text costs more, never less.
const maxEncoded = 2 << 20

// parallelPart is the least text a core counts on its own: a text of
// several times that is shared out among the cores in chunks (see
// shared) or, past what their bounds on encoding cover, counted in parts,
// a part a core (goroutine).
const parallelPart = 16 << 10

// splitText cuts s into at most n parts, each ending where a piece ends:
// after a line break that a letter, a digit or a symbol other than '/'
// follows. No piece runs across such a place: white space ends at its
// last line break, a run of symbols takes in the line breaks (and
// slashes) after it and stops there, letters take in no line break, nor
// does the character before them, and digits none. A part ends at the
// first such place after its share of s; without one, the rest is one
// part.
func splitText(s string, n int) []string {
	var parts []string
	for n > 1 && len(s) > 0 {
		cut := max(len(s)/n, 1)
		for cut < len(s) && !(s[cut-1] == '\n' && classAt(s, cut)&(asciiLetter|asciiDigit|asciiSymbol) != 0 && s[cut] != '/') {
			cut++
		}
		if cut >= len(s) {
			break
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
		n--
	}
	return append(parts, s)
}

// maxPiece bounds the piece that is byte-pair encoded. A piece is a run
// of letters, digits or the like, and byte-pair encoding a long one takes
// about a microsecond a byte (bpeCountLong): a megabyte of "x", which an
// upstream or an agent can produce, a second. A longer piece counts a
// token a byte, more than any encoding of it (a token is a byte at
// least). Counting in chunks instead would not do: a merge across a
// chunk's end can use up bytes that merge better on each side, and a run
// of letters would count a token fewer than it is at some ends.
const maxPiece = 1 << 20

// pieceCount counts one piece: exactly, up to maxPiece bytes.
func (t *Tokenizer) pieceCount(p string) int {
	if len(p) > maxPiece {
		return len(p)
	}
	return t.ranks.bpeCount(p)
}

// Prefix returns the longest prefix of s, ending between two of its
// pieces, that counts at most n tokens, and that count: how a text is cut
// to fit what a budget has left. Bytes that are not UTF-8 count as U+FFFD.
func (t *Tokenizer) Prefix(s string, n int64) (string, int64, error) {
	if n <= 0 || s == "" {
		return "", 0, nil
	}
	t.once.Do(t.load)
	if t.err != nil {
		return "", 0, t.err
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	var used int64
	end := 0
	for end < len(s) {
		size := pieceAt(s, end)
		c := int64(t.pieceCount(s[end : end+size]))
		if used+c > n {
			break
		}
		used += c
		end += size
	}
	return s[:end], used, nil
}

// load takes the ranks of the library's vocabulary, in which a token's id
// is its rank.
func (t *Tokenizer) load() {
	c := codec.NewO200kBase()
	if t.ranks = libraryRanks(c); t.ranks != nil {
		return
	}
	t.ranks = make(ranks, o200kTokens)
	for id := range uint(o200kTokens) {
		tok, err := c.Decode([]uint{id})
		if err != nil {
			t.err = fmt.Errorf("o200k_base vocabulary: token %d: %w", id, err)
			return
		}
		t.ranks[tok] = id
	}
}

// libraryRanks returns the library's own map of tokens to ids, which it
// builds anyway but does not export: read with reflect, it costs nothing,
// where decoding every id into a map of our own takes 50 ms more at the
// first count of every process (which a hook answered without the daemon
// would pay). Nil if the library no longer has such a map; load then
// decodes.
func libraryRanks(c *codec.Codec) ranks {
	v := reflect.ValueOf(c).Elem().FieldByName("vocabulary")
	want := reflect.TypeFor[ranks]()
	if !v.IsValid() || !v.Type().ConvertibleTo(want) || v.Len() != o200kTokens {
		return nil
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Convert(want).Interface().(ranks)
}

// o200kTokens is the number of o200k_base's ordinary tokens, ids 0 to
// 199997 (the special ones are never counted: text is text).
const o200kTokens = 199998
