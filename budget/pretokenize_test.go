package budget

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

// goldenCounts are texts and their o200k_base token counts by OpenAI's
// tiktoken (testdata/tiktoken/generate.mjs wrote them).
func goldenCounts(t testing.TB) []struct {
	Text   string `json:"text"`
	Tokens int64  `json:"tokens"`
} {
	t.Helper()
	b, err := os.ReadFile("../testdata/tiktoken/counts.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Text   string `json:"text"`
		Tokens int64  `json:"tokens"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// reference splits s with o200kPattern on a backtracking regular-expression
// engine. (Wrapped in a group, the pattern is not the one the encoding
// library registers compiled code for: that code differs from a
// backtracking engine, and from tiktoken, on some white space.)
var referenceRE = regexp2.MustCompile("(?:"+o200kPattern+")", regexp2.None)

func reference(t testing.TB, s string) []string {
	t.Helper()
	var out []string
	m, err := referenceRE.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = referenceRE.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func split(s string) []string {
	var out []string
	pieces(s, func(p string) { out = append(out, p) })
	return out
}

func TestPiecesMatchTheRegularExpression(t *testing.T) {
	t.Parallel()
	for _, g := range goldenCounts(t) {
		if got, want := split(g.Text), reference(t, g.Text); !equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("%.60q: piece %d is %q, want %q", g.Text, i, got[i], want[i])
					break
				}
			}
			t.Errorf("%.60q: %d pieces, want %d", g.Text, len(got), len(want))
		}
	}
}

// The counts are tiktoken's, on every kind of text.
func TestCountMatchesTiktoken(t *testing.T) {
	t.Parallel()
	tok := NewTokenizer()
	for _, g := range goldenCounts(t) {
		if got, err := tok.Count(g.Text); err != nil || got != g.Tokens {
			t.Errorf("%.60q: %d tokens, tiktoken counts %d (%v)", g.Text, got, g.Tokens, err)
		}
	}
}

// The two ways of byte-pair encoding agree on every piece of the golden
// texts and on long runs.
func TestBPEShortAndLongAgree(t *testing.T) {
	t.Parallel()
	tok := NewTokenizer()
	tok.Count("x")
	checked := 0
	for _, g := range goldenCounts(t) {
		pieces(g.Text, func(p string) {
			if len(p) > 1 && len(p) <= 64 {
				checked++
				if a, b := tok.ranks.bpeCountShort(p), tok.ranks.bpeCountLong(p); a != b {
					t.Errorf("%q: %d tokens by scanning, %d with the heap", p, a, b)
				}
			}
		})
	}
	if checked < 1000 {
		t.Errorf("only %d pieces checked", checked)
	}
}

func TestInvalidUTF8CountsAsReplacementCharacters(t *testing.T) {
	t.Parallel()
	tok := NewTokenizer()
	got, _ := tok.Count("ok \xff\xfe done")
	want, _ := tok.Count("ok \uFFFD\uFFFD done")
	if got != want || got == 0 {
		t.Errorf("%d tokens, want %d", got, want)
	}
}

// FuzzPieces looks for text that pieces and the regular expression cut
// differently.
func FuzzPieces(f *testing.F) {
	for _, g := range goldenCounts(f) {
		if len(g.Text) < 200 {
			f.Add(g.Text)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got, want := split(s), reference(t, s); !equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", s, got, want)
		}
	})
}

// FuzzBPE looks for a piece the two ways of byte-pair encoding count
// differently.
func FuzzBPE(f *testing.F) {
	tok := NewTokenizer()
	tok.Count("x")
	f.Add("hello")
	f.Add(strings.Repeat("ab", 40))
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) < 2 || len(p) > 64 {
			return
		}
		if a, b := tok.ranks.bpeCountShort(p), tok.ranks.bpeCountLong(p); a != b {
			t.Fatalf("%q: %d tokens by scanning, %d with the heap", p, a, b)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The ranks are the library's own map, read in place; decoding every id
// gives the same.
func TestRanksComeFromTheLibrary(t *testing.T) {
	t.Parallel()
	c := codec.NewO200kBase()
	lib := libraryRanks(c)
	if lib == nil {
		t.Fatal("the library's vocabulary was not found: loading now decodes every id (50 ms more per process)")
	}
	if len(lib) != o200kTokens || lib["hello"] != 24912 || lib[" world"] != 2375 {
		t.Fatalf("%d tokens; hello %d, world %d", len(lib), lib["hello"], lib[" world"])
	}
	for id := uint(0); id < o200kTokens; id += 997 {
		tok, err := c.Decode([]uint{id})
		if err != nil || lib[tok] != id {
			t.Fatalf("id %d: %q has rank %d (%v)", id, tok, lib[tok], err)
		}
	}
}

// Text of ASCII characters, and of ASCII beside characters that could
// continue a piece (letters, digits, marks, symbols and spaces outside
// ASCII, ſ in a contraction), is cut as the regular expression cuts it:
// the ASCII shortcut of pieceAt hands over wherever a character outside
// ASCII matters.
func TestASCIIPiecesMatchTheRegularExpression(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "z", "Q", "0", "7", " ", "  ", "\t", "\n", "\r", "'", "s", "T", "re", "!", "/", "-", "_", ".", "(",
		"é", "Σ", "٣", "\u0301", "—", "\u00a0", "\u0085", "ſ", "\x7f", "\x1f"}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rnd.IntN(24) {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := split(s), reference(t, s); !equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", s, got, want)
		}
	}
}

// rune1 decodes as utf8.DecodeRuneInString on every sequence of up to
// three bytes that starts outside ASCII, whole or cut short: valid
// characters, overlong forms, surrogates, stray continuation bytes.
func TestRune1DecodesAsTheLibrary(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 3)
	for c0 := 0x80; c0 <= 0xFF; c0++ {
		for c1 := range 256 {
			for c2 := range 256 {
				buf[0], buf[1], buf[2] = byte(c0), byte(c1), byte(c2)
				for n := 1; n <= 3; n++ {
					s := string(buf[:n])
					r, size := rune1(s, 0)
					if wr, wsize := utf8.DecodeRuneInString(s); r != wr || size != wsize {
						t.Fatalf("% x: %U (%d bytes), the library %U (%d)", s, r, size, wr, wsize)
					}
				}
			}
		}
	}
}

// lettersRun ends a run of letters where a loop over its bytes does, on
// every byte: those just outside a case's range ('@', '[', '`', '{'), and
// those outside ASCII whose low seven bits are a letter.
func TestLettersRunAsALoop(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(13, 14))
	edges := []byte("azAZ@[`{\x00\x7f\x80\xe1\xc1\xff")
	for range 20000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			if rnd.IntN(4) == 0 {
				b[i] = edges[rnd.IntN(len(edges))]
			} else {
				b[i] = 'a' + byte(rnd.IntN(26))
				if rnd.IntN(3) == 0 {
					b[i] -= 'a' - 'A'
				}
			}
		}
		lettersRunAsALoop(t, string(b), rnd.IntN(len(b)+1))
	}
}

// FuzzLettersRun looks for text where lettersRun and a loop over its
// bytes end a run of letters in different places.
func FuzzLettersRun(f *testing.F) {
	f.Add("abcdefghijklmnopqrstuvwxyz{", uint8(0))
	f.Add("ABCDEFGHIJ\xc1abc", uint8(2))
	f.Fuzz(func(t *testing.T, s string, at uint8) {
		lettersRunAsALoop(t, s, int(at)%(len(s)+1))
	})
}

func lettersRunAsALoop(t *testing.T, s string, j int) {
	t.Helper()
	for _, r := range []struct{ lo, hi byte }{{'a', 'z'}, {'A', 'Z'}} {
		want := j
		for want < len(s) && r.lo <= s[want] && s[want] <= r.hi {
			want++
		}
		if got := lettersRun(s, j, r.lo, r.hi); got != want {
			t.Fatalf("%q from %d, %c-%c: ends at %d, want %d", s, j, r.lo, r.hi, got, want)
		}
	}
}
