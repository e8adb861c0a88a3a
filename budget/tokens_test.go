package budget

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentharness/harness/internal/race"
)

// Known o200k_base counts (token ids checked against the published encoding:
// "hello world" is [24912 2375]).
func TestTokenCounts(t *testing.T) {
	t.Parallel()
	tk := NewTokenizer()
	for text, want := range map[string]int64{
		"":                   0,
		"hello world":        2,
		"Hello, world!":      4,
		"tiktoken is great!": 6,
		"The quick brown fox jumps over the lazy dog.": 10,
		"func main() {\n\tfmt.Println(\"hi\")\n}\n":    10,
	} {
		if got, err := tk.Count(text); err != nil || got != want {
			t.Errorf("Count(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	if n, err := tk.Count("\xff\xfe not utf-8"); err != nil || n == 0 {
		t.Errorf("invalid UTF-8: %d, %v", n, err)
	}
}

// A prefix ends between pieces and counts no more than asked; a megabyte
// run of one character is counted, and a short one exactly.
func TestPrefixAndLongPieces(t *testing.T) {
	t.Parallel()
	tk := NewTokenizer()
	text := "The harness counts what reaches the agent, and cuts what its budget does not cover."
	all, _ := tk.Count(text)
	for n := int64(0); n <= all+2; n++ {
		p, used, err := tk.Prefix(text, n)
		if err != nil {
			t.Fatal(err)
		}
		counted, _ := tk.Count(p)
		if used != counted || used > n || !strings.HasPrefix(text, p) || (n >= all && p != text) {
			t.Errorf("prefix of %d tokens: %q (%d, counted %d)", n, p, used, counted)
		}
	}
	long := strings.Repeat("x", 1<<20)
	n, err := tk.Count(long)
	if err != nil || n < int64(len(long))/10 || n > int64(len(long)) {
		t.Errorf("a megabyte of x: %d tokens, %v", n, err)
	}
	short, _ := tk.Count(strings.Repeat("x", 1000))
	if exact := tk.ranks.bpeCount(strings.Repeat("x", 1000)); short != int64(exact) {
		t.Errorf("a short run: %d, exactly %d", short, exact)
	}
}

// A long piece is counted as byte-pair encoding counts it whole, never
// fewer: counted in chunks, a merge across a chunk's end can use up bytes
// that would merge better on each side (bpeCount("slnatetlen") is 4, and
// "sl" and "natetlen" count 1 and 3), so a run of letters could be
// counted a token short at each end. Past maxPiece a piece counts a token
// a byte, more than any encoding of it.
func TestLongPiecesCountNoFewer(t *testing.T) {
	t.Parallel()
	tk := NewTokenizer()
	tk.Count("x")
	if whole, parts := tk.ranks.bpeCount("slnatetlen"), tk.ranks.bpeCount("sl")+tk.ranks.bpeCount("natetlen"); whole <= parts {
		t.Fatalf("slnatetlen counts %d, its parts %d: the example no longer shows it", whole, parts)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	syllables := []string{"a", "e", "i", "o", "u", "n", "t", "s", "r", "l", "th", "ing", "er", "re", "in", "an", "on", "st", "ed", "es", "ion", "at", "en"}
	for i := range race.Size(40, 8) {
		var b strings.Builder
		for b.Len() < 4<<10+rnd.IntN(12<<10) {
			b.WriteString(syllables[rnd.IntN(len(syllables))])
		}
		s := b.String()
		if got, whole := tk.pieceCount(s), tk.ranks.bpeCount(s); got != whole {
			t.Fatalf("run %d, %d bytes: counted %d, whole %d", i, len(s), got, whole)
		}
	}
	huge := strings.Repeat("ab", maxPiece/2) + "c"
	if got, whole := tk.pieceCount(huge), tk.ranks.bpeCount(huge); got != len(huge) || got < whole {
		t.Errorf("a piece of %d bytes: counted %d, whole %d", len(huge), got, whole)
	}
}

// A counting byte-pair encodes a bounded number of bytes of pieces that
// are not tokens whole, long or short; past the bound, such a piece counts
// a token a byte, more than its encoding, and never a count the memo
// keeps.
func TestCountingBoundsEncoding(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 8))
	letters := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rnd.IntN(26))
		}
		return string(b)
	}
	p1, p2, p3 := letters(600), " "+letters(600), " "+letters(600)
	text := p1 + p2 + p3
	exact := NewTokenizer()
	exact.Count("x")
	whole := exact.ranks.bpeCount(p1) + exact.ranks.bpeCount(p2) + exact.ranks.bpeCount(p3)
	if n, _ := exact.Count(text); n != int64(whole) {
		t.Fatalf("unbounded: %d, piece by piece %d", n, whole)
	}
	bounded := NewTokenizer()
	bounded.encoded = 1000
	want := exact.ranks.bpeCount(p1) + len(p2) + len(p3)
	for range 2 { // the second time with the memo the first left
		if n, _ := bounded.Count(text); n != int64(want) || n < int64(whole) {
			t.Errorf("bounded to 1000 bytes: %d, want %d (exactly %d)", n, want, whole)
		}
	}
	if n, _ := bounded.Count(p1); n != int64(exact.ranks.bpeCount(p1)) {
		t.Errorf("a text within the bound: %d, exactly %d", n, exact.ranks.bpeCount(p1))
	}

	// Short pieces are held to the bound too: a text of distinct words
	// of random letters (no memo, no whole token) costs as much a byte to
	// encode as a long piece. Each word is a piece the memo keeps; a
	// count past the bound is not kept.
	words := make([]string, 80)
	for i := range words {
		words[i] = " " + letters(19) // 20 bytes
	}
	text = strings.Join(words, "")
	exactly, within := 0, 0
	for i, w := range words {
		n := exact.ranks.bpeCount(w)
		if n == 1 {
			t.Fatalf("%q is a token", w)
		}
		exactly += n
		if i < 50 {
			within += n
		} else {
			within += len(w)
		}
	}
	bounded = NewTokenizer()
	bounded.encoded = 1000 // 50 words
	if n, _ := bounded.Count(text); n != int64(within) {
		t.Errorf("short pieces bounded to 1000 bytes: %d, want %d (exactly %d)", n, within, exactly)
	}
	rest := strings.Join(words[50:], "")
	restCount, _ := exact.Count(rest)
	if n, _ := bounded.Count(rest); n != restCount {
		t.Errorf("the words past the bound, counted again within it: %d, exactly %d (a count past the bound was remembered)", n, restCount)
	}
}

// A large text is counted in parts, on several cores: the parts end where
// pieces end, so the count is the text's, whatever it holds.
func TestPartsCountAsTheWhole(t *testing.T) {
	t.Parallel()
	tk := NewTokenizer()
	if _, err := tk.Count("load"); err != nil {
		t.Fatal(err)
	}
	var texts []string
	var log strings.Builder
	for i := 0; log.Len() < 200<<10; i++ {
		fmt.Fprintf(&log, "[%04d] compiling src/pkg%d/file_%d.go: ok\n/tmp/x\n\n  indented %d\n%d items\nWord\r\n", i, i%17, i, i, i)
	}
	texts = append(texts, log.String())
	rnd := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", "7", " ", "\n", "\n\n", "\r\n", "/", "[", "'s", "é", "—", "\t", "x)", "\n/", "\n "}
	for range race.Size(50, 8) {
		var b strings.Builder
		for b.Len() < 3*parallelPart {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		for n := 2; n <= 8; n++ {
			parts := splitText(s, n)
			if strings.Join(parts, "") != s {
				t.Fatalf("the parts of a text are not the text")
			}
			var sum int64
			for _, p := range parts {
				sum += tk.count(p)
			}
			if whole := tk.count(s); sum != whole {
				t.Fatalf("in %d parts (%d asked): %d tokens, whole: %d", len(parts), n, sum, whole)
			}
			for _, p := range parts {
				if len(p) == 0 {
					t.Fatal("an empty part")
				}
			}
			// Shared out in chunks among n goroutines.
			if got, whole := tk.shared(s, n), tk.count(s); got != whole {
				t.Fatalf("shared among %d: %d tokens, whole: %d", n, got, whole)
			}
		}
	}
	if len(splitText(texts[0], 2)) != 2 {
		t.Error("a log of lines was not cut")
	}
}

// FuzzPartsCountAsTheWhole looks for text whose parts count otherwise
// than it does whole.
func FuzzPartsCountAsTheWhole(f *testing.F) {
	tk := NewTokenizer()
	if _, err := tk.Count("load"); err != nil {
		f.Fatal(err)
	}
	f.Add("line one\nline two\n[3] x\n/root\n", uint8(0))
	f.Add("a)\n/b\n\n c\n7d", uint8(3))
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		if !utf8.ValidString(s) {
			return
		}
		var sum int64
		for _, p := range splitText(s, int(n%8)+2) {
			sum += tk.count(p)
		}
		whole := tk.count(s)
		if sum != whole {
			t.Fatalf("%q in parts: %d tokens, whole: %d", s, sum, whole)
		}
		if shared := tk.shared(s, int(n%4)+2); shared != whole {
			t.Fatalf("%q shared: %d tokens, whole: %d", s, shared, whole)
		}
	})
}

// A text that cores times the bound on encoding covers is shared out in
// chunks (Tokenizer.shared) and counted exactly, even where it is made of
// nothing but pieces that are not tokens; past that, it is counted in a
// part a core, each part within the bound.
func TestSharedCountIsExact(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Fatalf("GOMAXPROCS %d: this test needs two cores to share a text among", runtime.GOMAXPROCS(0))
	}
	rnd := rand.New(rand.NewPCG(11, 12))
	var words []string
	var b strings.Builder
	for b.Len() < 3*parallelPart {
		w := make([]byte, 20)
		w[0] = ' '
		for i := 1; i < len(w); i++ {
			w[i] = byte('a' + rnd.IntN(26))
		}
		if b.Len() > 0 && rnd.IntN(8) == 0 {
			w[0] = '\n' // places to cut
		}
		words = append(words, string(w))
		b.Write(w)
	}
	text := b.String()
	exact := NewTokenizer()
	exact.Count("x")
	want := int64(0)
	for _, w := range words {
		want += int64(exact.ranks.bpeCount(w))
	}
	if got, _ := exact.Count(text); got != want {
		t.Fatalf("unbounded: %d, piece by piece %d", got, want)
	}
	cores := min(runtime.GOMAXPROCS(0), len(text)/parallelPart)
	for _, tc := range []struct {
		name    string
		encoded int
		exact   bool
	}{
		{"within the bound on every core", len(text)/cores + 1, true},
		{"past the bound of the cores", len(text)/cores - 2000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := NewTokenizer()
			tk.encoded = tc.encoded
			for i := range 3 { // again with the memos of the first
				got, err := tk.Count(text)
				if err != nil {
					t.Fatal(err)
				}
				if tc.exact && got != want {
					t.Fatalf("count %d: %d tokens, exactly %d", i, got, want)
				}
				if !tc.exact && i == 0 && got <= want {
					t.Fatalf("past the bound: %d tokens, no more than exactly (%d): nothing was counted a token a byte", got, want)
				}
				if got < want {
					t.Fatalf("count %d: %d tokens, fewer than exactly (%d)", i, got, want)
				}
			}
		})
	}
}

// A memo key is its piece: two pieces have the same key (and length) only
// if they are equal, wherever they stand in their texts, at the end of one
// (read byte by byte) or amid it (read a word at a time).
func TestMemoKeysArePieces(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(9, 10))
	// Pieces that share their first and last eight bytes and differ only
	// in the middle, or only in a byte a mask would drop.
	const base = "abcdefghijklmnopqrstuvwx"
	var pieces []string
	for n := 1; n <= memoPiece; n++ {
		p := base[:n]
		pieces = append(pieces, p)
		for k := range n {
			b := []byte(p)
			b[k] = 'A' + byte(k)
			pieces = append(pieces, string(b))
		}
		pieces = append(pieces, p[:n-1]+"\x00")
	}
	type where struct {
		s string
		i int
	}
	places := func(p string) []where {
		pad := strings.Repeat("z", rnd.IntN(9))
		return []where{
			{p, 0},                             // the whole text
			{pad + p, len(pad)},                // at its end
			{pad + p + "........", len(pad)},   // amid it
			{p + strings.Repeat("\x00", 8), 0}, // before zero bytes
		}
	}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, x := range places(a) {
				for _, y := range places(b) {
					same := keyOf(x.s, x.i, len(a)) == keyOf(y.s, y.i, len(b)) && len(a) == len(b)
					if same != (a == b) {
						t.Fatalf("%q at %d of %q and %q at %d of %q: same key %v", a, x.i, x.s, b, y.i, y.s, same)
					}
				}
			}
		}
	}
}

// Counts answered by the memo are the counts byte-pair encoding gives,
// over many texts whose pieces crowd the memo's slots: pieces that differ
// only amid their bytes, and of every length it keeps, with a large memo
// and with a small one (whose slots each piece takes from another).
func TestMemoAnswersAsEncoding(t *testing.T) {
	t.Parallel()
	for _, small := range []bool{false, true} {
		tk := NewTokenizer()
		tk.Count("load")
		if small { // every large memo taken: countings get small ones
			for range maxMemos {
				tk.memos.get()
			}
		}
		memoAnswersAsEncoding(t, tk)
	}
}

func memoAnswersAsEncoding(t *testing.T, tk *Tokenizer) {
	rnd := rand.New(rand.NewPCG(11, 12))
	letters := "etaoinshrdlucmfwypvbgkjqxz"
	for range race.Size(300, 30) {
		var b strings.Builder
		for b.Len() < 2000 {
			n := 1 + rnd.IntN(memoPiece+4)
			w := []byte(strings.Repeat("q", n))
			for range 1 + rnd.IntN(3) {
				w[rnd.IntN(n)] = letters[rnd.IntN(len(letters))]
			}
			// "! ", "!\x00" and "!\x00\x00" make pieces that differ only
			// by zero bytes at their end.
			seps := []string{" ", "\n", ", ", "(", " 12", "! ", "!\x00", "!\x00\x00"}
			b.WriteString(seps[rnd.IntN(len(seps))])
			b.Write(w)
		}
		s := b.String()
		want := 0
		pieces(s, func(p string) { want += tk.ranks.bpeCount(p) })
		if got := tk.count(s); got != int64(want) {
			t.Fatalf("%.80q...: %d tokens, encoding each piece gives %d", s, got, want)
		}
	}
}

// The table of character classes agrees with Unicode's tables on every
// character.
func TestClassesMatchUnicode(t *testing.T) {
	t.Parallel()
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if r == 0xD800 {
			r = 0xE000 // surrogates are not characters
		}
		if isUpperish(r) != unicode.IsOneOf([]*unicode.RangeTable{unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M}, r) ||
			isLowerish(r) != unicode.IsOneOf([]*unicode.RangeTable{unicode.Ll, unicode.Lm, unicode.Lo, unicode.M}, r) ||
			isLetter(r) != unicode.IsLetter(r) || isNumber(r) != unicode.IsNumber(r) || isSpace(r) != unicode.IsSpace(r) ||
			isSymbol(r) != (!unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)) {
			t.Fatalf("U+%04X: classes %05b", r, classOf(r))
		}
	}
	for r := rune(0); r < 0x80; r++ {
		if isLetter(r) != unicode.IsLetter(r) || isNumber(r) != unicode.IsNumber(r) || isSpace(r) != unicode.IsSpace(r) ||
			isSymbol(r) != (!unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)) {
			t.Fatalf("%q: not classed as Unicode classes it", r)
		}
	}
}

// A tokenizer's memos outlive garbage collections: a gateway collects
// every few results, and a memo emptied each time answers nothing.
func TestMemosOutliveCollections(t *testing.T) {
	tk := NewTokenizer()
	tk.Count("the quick brown fox jumps over the lazy dog")
	runtime.GC()
	runtime.GC()
	m := tk.memos.get()
	kept := 0
	for _, s := range m.short {
		if s.n > 0 {
			kept++
		}
	}
	if kept == 0 {
		t.Error("after two collections the memo knows no piece")
	}
}

// The large memos a tokenizer holds are bounded however many countings
// run at once: past maxMemos a counting gets a small memo, and only the
// large ones are kept.
func TestMemosAreBounded(t *testing.T) {
	t.Parallel()
	var p memoPool
	var taken []*pieceMemo
	large := 0
	for range 3 * maxMemos {
		m := p.get()
		taken = append(taken, m)
		if len(m.short) == memoSlots {
			large++
		} else if len(m.short) != smallMemoSlots {
			t.Fatalf("a memo of %d slots", len(m.short))
		}
	}
	if large != maxMemos {
		t.Errorf("%d countings at once hold %d large memos, want %d", len(taken), large, maxMemos)
	}
	for _, m := range taken {
		p.put(m)
	}
	if len(p.free) != maxMemos {
		t.Errorf("%d large memos kept, want %d", len(p.free), maxMemos)
	}
	// Counting with a small memo counts the same.
	tk := NewTokenizer()
	text := strings.Repeat("the quick brown fox, 42 times; ", 50)
	want, _ := tk.Count(text)
	for range maxMemos {
		tk.memos.get()
	}
	if got := tk.count(text); got != want {
		t.Errorf("with a small memo: %d tokens, want %d", got, want)
	}
}

// A text with nowhere to cut is one chunk, which one goroutine counts: it
// is held to the bound on what a counting encodes, as the text counted
// whole is, not to the bound of all the cores (found by the attack review:
// a text of words with no line break took cores times as long).
func TestUncutTextIsHeldToTheBound(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 6))
	const bound = 64 << 10
	b := make([]byte, 2*bound) // what two cores may encode, without a line break
	for i := range b {
		if i%20 == 0 {
			b[i] = ' '
		} else {
			b[i] = byte('a' + rnd.IntN(26))
		}
	}
	s := string(b)
	if n := len(splitText(s, len(s)/sharedChunk)); n != 1 {
		t.Fatalf("the text was cut in %d chunks", n)
	}
	tk := NewTokenizer()
	tk.encoded = bound
	tk.Count("x")
	got := tk.shared(s, 2)
	whole := NewTokenizer()
	whole.encoded = bound
	whole.Count("x")
	if want := whole.count(s); got != want {
		t.Fatalf("an uncut text of %d bytes shared: %d tokens, counted whole within the bound: %d (one goroutine encoded past the bound of %d bytes)", len(s), got, want, bound)
	}
}
