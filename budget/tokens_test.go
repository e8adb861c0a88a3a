package budget

import (
	"strings"
	"testing"
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

// A prefix ends between pieces and counts no more than asked; a long run of
// one character is counted in chunks, fast, and never below tiktoken's
// count.
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
