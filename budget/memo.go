package budget

import "encoding/binary"

// Text repeats its pieces (the words and separators of a log, a listing,
// a language), and byte-pair encoding a piece means looking it and its
// parts up in a map of 200,000 tokens, whose memory is mostly out of the
// processor's caches. A memo of short pieces' counts, small enough to stay
// in them, answers the repeats.

// memoSlots is the memo's size, and memoPiece the longest piece it keeps.
const (
	memoSlots = 1 << 12
	memoPiece = 24
)

// pieceMemo maps pieces of at most memoPiece bytes to their counts, one
// piece a slot (a newer piece takes the slot of an older one). A
// tokenizer keeps its own memos (Tokenizer.memos), one a counting at a
// time; a memo keeps what it learnt for the next counting.
type pieceMemo struct {
	slots [memoSlots]memoSlot
}

type memoSlot struct {
	n     uint8 // the piece's length; 0: empty
	count uint8
	piece [memoPiece]byte
}

// count returns the count of piece p, from the memo or counted with count,
// which says whether its count is exact (one past a bound is not kept).
func (m *pieceMemo) count(p string, count func(string) (int, bool)) int {
	if len(p) > memoPiece {
		n, _ := count(p)
		return n
	}
	s := &m.slots[slot(p)]
	if int(s.n) == len(p) && string(s.piece[:s.n]) == p {
		return int(s.count)
	}
	n, exact := count(p)
	if exact && n <= 255 {
		s.n, s.count = uint8(len(p)), uint8(n)
		copy(s.piece[:], p)
	}
	return n
}

// slot is p's slot: a hash of its first and last eight bytes (all of them,
// when it has fewer) and its length. Cheap rather than strong: a clash
// costs a count, never a wrong one.
func slot(p string) uint64 {
	var a, b uint64
	if len(p) >= 8 {
		a = binary.LittleEndian.Uint64([]byte(p[:8]))
		b = binary.LittleEndian.Uint64([]byte(p[len(p)-8:]))
	} else {
		for i := range len(p) {
			a = a<<8 | uint64(p[i])
		}
	}
	h := (a ^ b*0x9E3779B97F4A7C15 ^ uint64(len(p))) * 0xBF58476D1CE4E5B9
	return (h >> 32) & (memoSlots - 1)
}
