package budget

import (
	"unicode/utf8"
)

// o200kPattern is how o200k_base splits text into pieces before the
// byte-pair encoding of each: at each position the first of these
// alternatives that matches, with the backtracking of a regular-expression
// engine (OpenAI's tiktoken runs it on fancy-regex).
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
	`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
	`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// pieces calls yield with each piece of valid UTF-8 text s, as matching
// o200kPattern again and again would: found by hand in one pass, several
// times faster than a backtracking engine. Tests hold it to such an engine
// on every kind of text, and a fuzz test looks for a difference. Counting
// walks the pieces the same way, pieceAt after pieceAt, in a loop of its
// own (Tokenizer.count).
func pieces(s string, yield func(string)) {
	for i := 0; i < len(s); {
		n := pieceAt(s, i)
		yield(s[i : i+n])
		i += n
	}
}

// pieceAt returns the length in bytes of the piece at s[i:]: by the ASCII
// shortcut where it can tell, else by generalPieceAt.
func pieceAt(s string, i int) int {
	if s[i] < 0x80 {
		if n, ok := asciiPieceAt(s, i); ok {
			return n
		}
	}
	return generalPieceAt(s, i)
}

// generalPieceAt returns the length in bytes of the piece at s[i:], trying
// the pattern's alternatives in order.
func generalPieceAt(s string, i int) int {
	if n := letters(s, i, true); n > 0 { // alternative 1
		return n
	}
	if n := letters(s, i, false); n > 0 { // alternative 2
		return n
	}
	r, size := rune1(s, i)
	if isNumber(r) { // \p{N}{1,3}
		end := i + size
		for k := 1; k < 3 && end < len(s); k++ {
			r, size := rune1(s, end)
			if !isNumber(r) {
				break
			}
			end += size
		}
		return end - i
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	start := i
	if r == ' ' {
		start++
	}
	if end := run(s, start, isSymbol); end > start {
		return run(s, end, isBreakOrSlash) - i
	}
	// What is left is white space: its run, up to w.
	w := run(s, i, isSpace)
	// \s*[\r\n]+: up to the last line break of the run.
	for k := w; k > i; {
		r, size := utf8.DecodeLastRuneInString(s[i:k])
		if r == '\r' || r == '\n' {
			return k - i
		}
		k -= size
	}
	// \s+(?!\S): the run, but for its last character when something
	// follows it; else \s+: the run.
	if w < len(s) {
		if _, size := utf8.DecodeLastRuneInString(s[i:w]); w-size > i {
			return w - size - i
		}
	}
	if w > i {
		return w - i
	}
	// Every character is a letter, number, symbol or space, so nothing
	// gets here; one character, to be safe.
	return size
}

// letters matches the first (lowerRequired) or second alternative at i:
//
//	[^\r\n\p{L}\p{N}]?[UP]*[LO]+(contraction)?     (first)
//	[^\r\n\p{L}\p{N}]?[UP]+[LO]*(contraction)?     (second)
//
// with UP = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and LO = [\p{Ll}\p{Lm}\p{Lo}\p{M}],
// and returns the length of the match, 0 for none. The optional first
// character is tried taken, then not.
func letters(s string, i int, lowerRequired bool) int {
	r, size := rune1(s, i)
	if r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) {
		if end := casedRun(s, i+size, lowerRequired); end > 0 {
			return contraction(s, end) - i
		}
	}
	if end := casedRun(s, i, lowerRequired); end > 0 {
		return contraction(s, end) - i
	}
	return 0
}

// casedRun matches [UP]*[LO]+ (lowerRequired) or [UP]+[LO]* at j and
// returns where the match ends, 0 for none. [UP]* is greedy and gives back
// characters until a LO one can follow (Lm, Lo and M are in both classes).
func casedRun(s string, j int, lowerRequired bool) int {
	end := run(s, j, isUpperish)
	if !lowerRequired {
		if end == j {
			return 0
		}
		return run(s, end, isLowerish)
	}
	if end < len(s) {
		if r, _ := rune1(s, end); isLowerish(r) {
			return run(s, end, isLowerish)
		}
	}
	// Give back UP characters until the one given back is also LO: it alone
	// is the [LO]+, as the character after it is not LO.
	for k := end; k > j; {
		r, size := utf8.DecodeLastRuneInString(s[j:k])
		if isLowerish(r) {
			return k
		}
		k -= size
	}
	return 0
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d)? at k and returns where
// it ends (k when there is none). Case-insensitively, s is also ſ.
func contraction(s string, k int) int {
	if k+1 >= len(s) || s[k] != '\'' {
		return k
	}
	switch s[k+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return k + 2
	}
	if s[k+1:min(k+3, len(s))] == "ſ" { // case-insensitively an s
		return k + 3
	}
	if k+2 < len(s) {
		switch a, b := s[k+1]|0x20, s[k+2]|0x20; {
		case a == 'r' && b == 'e', a == 'v' && b == 'e', a == 'l' && b == 'l':
			return k + 3
		}
	}
	return k
}

// run returns where the run of characters of class in starting at j ends.
func run(s string, j int, in func(rune) bool) int {
	for j < len(s) {
		r, size := rune1(s, j)
		if !in(r) {
			break
		}
		j += size
	}
	return j
}

// rune1 decodes the character at s[i] as utf8.DecodeRuneInString does,
// the characters of one to three bytes (every script of the Basic
// Multilingual Plane) without a call.
func rune1(s string, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	if c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
		return rune(c&0x1F)<<6 | rune(s[i+1]&0x3F), 2
	}
	if c >= 0xE0 && c < 0xF0 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
		// Not an overlong form, nor a surrogate.
		if r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F); r >= 0x800 && (r < 0xD800 || r > 0xDFFF) {
			return r, 3
		}
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return classOf(r)&uUpperish != 0
}

func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return classOf(r)&uLowerish != 0
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return classOf(r)&uNumber != 0
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return classOf(r)&uLetter != 0
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r]&asciiSpace != 0
	}
	return classOf(r)&uSpace != 0
}

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r]&asciiSymbol != 0
	}
	return classOf(r)&(uSpace|uLetter|uNumber) == 0
}

func isBreakOrSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }
