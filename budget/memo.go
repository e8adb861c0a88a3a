package budget

import (
	"encoding/binary"
	"runtime"
	"sync"
	"unsafe"
)

// Text repeats its pieces (the words and separators of a log, a listing,
// a language), and byte-pair encoding a piece means looking it and its
// parts up in a map of 200,000 tokens, whose memory is mostly out of the
// processor's caches. A memo of short pieces' counts, small enough to stay
// in them, answers the repeats.

// memoSlots is the size of a memo a tokenizer keeps, smallMemoSlots of
// one a counting uses once (see memoPool), and memoPiece the longest piece
// a memo keeps.
const (
	memoSlots      = 1 << 14
	smallMemoSlots = 1 << 8
	memoPiece      = 24
)

// pieceMemo maps pieces of at most memoPiece bytes to their counts, one
// piece a slot (a newer piece takes the slot of an older one). A
// tokenizer keeps its own memos (Tokenizer.memos), one a counting at a
// time; a memo keeps what it learnt for the next counting.
//
// Pieces of at most eight bytes, nine in ten of a text's, have slots of
// their own (short) of half the size, a word for the key: more of them
// stay in the processor's caches, and a lookup compares one word.
type pieceMemo struct {
	slots []memoSlot  // for longer pieces; a power of two of them
	short []shortSlot // four times as many
}

// shortSlot holds a piece of at most eight bytes as its key (the first
// word of its memoKey) and its count.
type shortSlot struct {
	key      uint64
	n, count uint8 // the piece's length (0: empty) and count
}

// newMemo returns an empty memo of n slots for short pieces and a quarter
// as many for longer ones (n a power of two, 4 at least).
func newMemo(n int) *pieceMemo {
	return &pieceMemo{slots: make([]memoSlot, n/4), short: make([]shortSlot, n)}
}

// findShort returns the slot of the piece of n bytes (at most eight) whose
// key is k, and its count if the slot holds that piece. The key is the
// piece's bytes and zeros after them, so the length tells apart pieces
// that differ only by zero bytes at their end. The hash is a
// multiplication, whose high bits choose the slot.
func (m *pieceMemo) findShort(k uint64, n int) (s *shortSlot, count int, ok bool) {
	h := (k ^ uint64(n)<<59) * 0x9E3779B97F4A7C15
	s = &m.short[(h>>32)&uint64(len(m.short)-1)]
	return s, int(s.count), int(s.n) == n && s.key == k
}

// keep records in slot s the count of the piece of n bytes whose key is k.
func (s *shortSlot) keep(k uint64, n, count int) {
	if count <= 255 {
		s.key, s.n, s.count = k, uint8(n), uint8(count)
	}
}

// memoSlot holds a piece as its key (see memoKey) and its count.
type memoSlot struct {
	key      memoKey
	n, count uint8 // the piece's length (0: empty) and count
}

// memoKey is a piece of at most memoPiece bytes as three words: its first
// eight bytes, its next eight, and its last eight, each read little-endian,
// a word past the piece's end zero. For a piece of n bytes the first word
// holds bytes 0 to 7, the second 8 to 15 (when n > 16) and the third n-8
// to n-1 (when n > 8), so that, with n, the key is the piece: two pieces of
// the same length have the same key only if they are equal, and keys are
// compared as numbers, not bytes.
type memoKey struct{ first, second, last uint64 }

// keyOf returns the key of the piece s[i:i+n] (n at most memoPiece).
func keyOf(s string, i, n int) memoKey {
	if n <= 8 && i+8 <= len(s) { // most pieces
		return shortKey(s, i, n)
	}
	return longKeyOf(s, i, n)
}

// shortKey is the key of a piece s[i:i+n] of at most eight bytes, with
// eight bytes to read from i: one word read, masked to the piece. It is
// small enough to be inlined where keys are made a piece at a time.
func shortKey(s string, i, n int) memoKey {
	return memoKey{first: word(s, i) & (^uint64(0) >> (64 - 8*uint(n)))}
}

// longKeyOf is keyOf for a piece of more than eight bytes, or at the end
// of s.
func longKeyOf(s string, i, n int) memoKey {
	var k memoKey
	switch {
	case n >= 8:
		k.first, k.last = word(s, i), word(s, i+n-8)
		if n > 16 {
			k.second = word(s, i+8)
		}
		if n == 8 {
			k.last = 0
		}
	default: // the end of s: byte by byte
		for j := n - 1; j >= 0; j-- {
			k.first = k.first<<8 | uint64(s[i+j])
		}
	}
	return k
}

// word is the eight bytes of s from i, little-endian (i+8 <= len(s)): one
// load where the processor allows it.
func word(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:i+8]), 8))
}

// slot is a hash of a key of a piece of n bytes, whose low bits choose its
// slot in a memo. Cheap rather than strong: a clash costs a count, never a
// wrong one.
func (k memoKey) slot(n int) uint64 {
	h := (k.first ^ k.last*0x9E3779B97F4A7C15 ^ uint64(n)) * 0xBF58476D1CE4E5B9
	return h >> 32
}

// find returns the slot of the piece of n bytes whose key is k, and its
// count if the slot holds that piece.
func (m *pieceMemo) find(k memoKey, n int) (s *memoSlot, count int, ok bool) {
	s = &m.slots[k.slot(n)&uint64(len(m.slots)-1)]
	return s, int(s.count), int(s.n) == n && s.key == k
}

// keep records in slot s the count of the piece of n bytes whose key is k.
func (s *memoSlot) keep(k memoKey, n, count int) {
	if count <= 255 {
		s.key, s.n, s.count = k, uint8(n), uint8(count)
	}
}

// memoPool hands out memos and keeps them between countings. The memos
// it keeps, of memoSlots each (384 KiB), are at most maxMemos, made as
// countings ran at once: a counting's memo is then warm with the pieces
// of the texts before. A counting that finds all of them in use (more
// parts of results counted at once than four a core) gets a small memo
// of its own, which the garbage collector takes back: a gateway on two
// cores counting the results of a hundred sessions at once holds 3 MiB of
// memos, where a memo each would be 38 MiB.
type memoPool struct {
	mu    sync.Mutex
	free  []*pieceMemo
	made  int       // memos of memoSlots made, at most maxMemos
	small sync.Pool // of small memos
}

// maxMemos bounds the large memos of a pool: one for each part of a text
// counted on every core at once, four texts at a time, up to 32.
var maxMemos = min(4*runtime.GOMAXPROCS(0), 32)

// get takes a memo from the pool, makes one, or gives a small one.
func (p *memoPool) get() *pieceMemo {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		m := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return m
	}
	if p.made < maxMemos {
		p.made++
		p.mu.Unlock()
		return newMemo(memoSlots)
	}
	p.mu.Unlock()
	if m, ok := p.small.Get().(*pieceMemo); ok {
		return m
	}
	return newMemo(smallMemoSlots)
}

// put gives a memo back.
func (p *memoPool) put(m *pieceMemo) {
	if len(m.short) != memoSlots {
		p.small.Put(m)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, m)
}
