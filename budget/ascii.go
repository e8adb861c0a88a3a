package budget

import "math/bits"

// The pieces of ASCII text, the bulk of what tools print, are found with a
// table of the characters' classes, without decoding characters or
// looking them up in Unicode's tables. Where a piece could run on past
// its ASCII characters (a letter, a digit, a symbol or a space outside
// ASCII may continue it), pieceAt goes the general way.

// Classes of the ASCII characters, as o200kPattern sees them.
const (
	asciiUpper  = 1 << iota // A-Z: \p{Lu}
	asciiLower              // a-z: \p{Ll}
	asciiDigit              // 0-9: \p{N}
	asciiSpace              // \t \n \v \f \r and ' ': \s
	asciiBreak              // \r \n
	asciiSymbol             // anything else: [^\s\p{L}\p{N}]

	asciiLetter = asciiUpper | asciiLower
)

// asciiClass is the class of each byte; 0 for a byte outside ASCII, so
// that a run of a class ends at one without a test of its own.
var asciiClass = func() (t [256]uint8) {
	for c := range 128 {
		switch {
		case 'A' <= c && c <= 'Z':
			t[c] = asciiUpper
		case 'a' <= c && c <= 'z':
			t[c] = asciiLower
		case '0' <= c && c <= '9':
			t[c] = asciiDigit
		case c == '\r' || c == '\n':
			t[c] = asciiSpace | asciiBreak
		case c == '\t' || c == '\v' || c == '\f' || c == ' ':
			t[c] = asciiSpace
		default:
			t[c] = asciiSymbol
		}
	}
	return t
}()

// classAt is the class of s[i], 0 at the end of s and for a byte outside
// ASCII (whose character's class is not known here).
func classAt(s string, i int) uint8 {
	if i >= len(s) {
		return 0
	}
	return asciiClass[s[i]]
}

// outside reports whether s[i] is a byte of a character outside ASCII.
func outside(s string, i int) bool { return i < len(s) && s[i] >= 0x80 }

// asciiRun returns where the run of characters of s from j whose class
// has a bit of class ends, and whether it ends at a character outside
// ASCII (which might have continued it).
func asciiRun(s string, j int, class uint8) (int, bool) {
	for j < len(s) && asciiClass[s[j]]&class != 0 {
		j++
	}
	return j, outside(s, j)
}

// asciiPieceAt is pieceAt for a piece of ASCII characters; ok is false
// when the piece might take in a character outside ASCII.
func asciiPieceAt(s string, i int) (n int, ok bool) {
	c := asciiClass[s[i]]
	// Alternatives 1 and 2: letters, after one character that is not a
	// letter, a digit or a line break. In ASCII the cased runs are
	// [A-Z]*[a-z]+ and [A-Z]+[a-z]*: any run of capitals then small letters
	// with at least one letter, which ends in the same place either way.
	j := i
	if c&(asciiSymbol|asciiSpace) != 0 && c&asciiBreak == 0 {
		j = i + 1
	}
	if j < len(s) && s[j] >= 0x80 {
		return 0, false
	}
	if classAt(s, j)&asciiLetter != 0 {
		end := j
		if s[j] < 'a' { // most words begin with a small letter
			end = lettersRun(s, j, 'A', 'Z')
		}
		if end = lettersRun(s, end, 'a', 'z'); outside(s, end) {
			return 0, false
		}
		if end+1 < len(s) && s[end] == '\'' && s[end+1] >= 0x80 {
			return 0, false // a contraction with ſ
		}
		if end < len(s) && s[end] == '\'' {
			end = contraction(s, end)
		}
		return end - i, true
	}
	switch {
	case c&asciiDigit != 0: // \p{N}{1,3}
		end := i + 1
		for k := 1; k < 3; k++ {
			if outside(s, end) {
				return 0, false
			}
			if classAt(s, end) != asciiDigit {
				break
			}
			end++
		}
		return end - i, true
	case c&asciiSymbol != 0 || c == asciiSpace && s[i] == ' ' && classAt(s, i+1) == asciiSymbol:
		// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
		start := i
		if s[i] == ' ' {
			start++
		}
		end, out := asciiRun(s, start, asciiSymbol)
		if out {
			return 0, false
		}
		for end < len(s) && (s[end] == '\r' || s[end] == '\n' || s[end] == '/') {
			end++
		}
		return end - i, true
	case c&asciiSpace != 0:
		if s[i] == ' ' && outside(s, i+1) {
			return 0, false // ' ?' before a symbol outside ASCII
		}
		w, out := asciiRun(s, i, asciiSpace)
		if out {
			return 0, false
		}
		// \s*[\r\n]+: up to the last line break of the run.
		for k := w; k > i; k-- {
			if s[k-1] == '\r' || s[k-1] == '\n' {
				return k - i, true
			}
		}
		// \s+(?!\S): all but the last when something follows; else \s+.
		if w < len(s) && w-1 > i {
			return w - 1 - i, true
		}
		return w - i, true
	}
	return 0, false
}

// lettersRun returns where the run of the characters lo to hi (ASCII
// letters of one case) of s from j ends: eight bytes at a time, by
// arithmetic on each byte of a word, where the end of a run, at a place
// no branch predicts, would cost a mispredicted branch a byte loop takes.
func lettersRun(s string, j int, lo, hi byte) int {
	const high = 0x8080808080808080
	below := (0x80 - uint64(lo)) * 0x0101010101010101 // a byte plus this has its top bit set iff it is lo or more
	above := (0x7F - uint64(hi)) * 0x0101010101010101 // iff it is more than hi
	for j+8 <= len(s) {
		w := word(s, j)
		v := w &^ high // the bytes outside ASCII are not letters: their top bit is masked below
		in := (v + below) &^ (v + above) &^ w & high
		if in != high {
			return j + bits.TrailingZeros64(^in&high)/8
		}
		j += 8
	}
	for j < len(s) && lo <= s[j] && s[j] <= hi {
		j++
	}
	return j
}
