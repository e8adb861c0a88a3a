package budget

import (
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
