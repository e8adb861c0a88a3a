package budget

import (
	"container/heap"
	"math"
)

// ranks maps each o200k_base token (its bytes) to its rank, which is also
// its id: byte-pair encoding merges the pair of lowest rank first.
type ranks map[string]uint

const noRank = math.MaxUint

// bpeCount returns how many tokens byte-pair encoding makes of piece: start
// from single bytes and merge, again and again, the adjacent pair whose
// concatenation is the token of lowest rank (the leftmost among equals),
// as tiktoken does.
func (r ranks) bpeCount(piece string) int {
	if _, ok := r[piece]; ok {
		return 1
	}
	if len(piece) > longPiece {
		return r.bpeCountLong(piece)
	}
	return r.bpeCountShort(piece)
}

// bpeCountShort is bpeCount for a piece of 64 bytes at most: a scan for the
// lowest rank after each merge, as tiktoken does.
func (r ranks) bpeCountShort(piece string) int {
	var buf [65]int
	starts := buf[:0]
	for i := 0; i <= len(piece); i++ {
		starts = append(starts, i) // part k is piece[starts[k]:starts[k+1]]
	}
	for len(starts) > 2 {
		best, at := uint(noRank), -1
		for k := 0; k+2 < len(starts); k++ {
			if rank, ok := r[piece[starts[k]:starts[k+2]]]; ok && rank < best {
				best, at = rank, k
			}
		}
		if at < 0 {
			break
		}
		starts = append(starts[:at+1], starts[at+2:]...)
	}
	return len(starts) - 1
}

// bpeCountLong is bpeCount for a long piece, in O(n log n): the parts are a
// linked list, and the candidate merges a heap ordered by rank, then start.
func (r ranks) bpeCountLong(piece string) int {
	n := len(piece)
	next := make([]int, n) // next[i]: the start of the part after the one at i (n at the end)
	prev := make([]int, n) // prev[i]: the start of the part before (-1 at the start)
	alive := make([]bool, n)
	for i := range n {
		next[i], prev[i], alive[i] = i+1, i-1, true
	}
	rankAt := func(i int) uint { // of the part at i merged with the next one
		if i < 0 || next[i] >= n {
			return noRank
		}
		end := n
		if j := next[i]; j < n {
			end = next[j]
		}
		if rank, ok := r[piece[i:end]]; ok {
			return rank
		}
		return noRank
	}
	h := &merges{}
	for i := range n - 1 {
		if rank := rankAt(i); rank != noRank {
			*h = append(*h, merge{rank, i})
		}
	}
	heap.Init(h)
	parts := n
	for h.Len() > 0 {
		m := heap.Pop(h).(merge)
		if !alive[m.start] || rankAt(m.start) != m.rank {
			continue // stale: the part or its neighbour has changed
		}
		j := next[m.start] // merge the part at j into the one at start
		alive[j] = false
		next[m.start] = next[j]
		if next[j] < n {
			prev[next[j]] = m.start
		}
		parts--
		for _, i := range []int{m.start, prev[m.start]} {
			if rank := rankAt(i); rank != noRank {
				heap.Push(h, merge{rank, i})
			}
		}
	}
	return parts
}

// merge is a candidate: the part starting at start with the one after it,
// making the token of rank rank.
type merge struct {
	rank  uint
	start int
}

type merges []merge

func (m merges) Len() int { return len(m) }
func (m merges) Less(i, j int) bool {
	return m[i].rank < m[j].rank || m[i].rank == m[j].rank && m[i].start < m[j].start
}
func (m merges) Swap(i, j int) { m[i], m[j] = m[j], m[i] }
func (m *merges) Push(x any)   { *m = append(*m, x.(merge)) }
func (m *merges) Pop() any {
	old := *m
	x := old[len(old)-1]
	*m = old[:len(old)-1]
	return x
}
