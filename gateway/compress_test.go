package gateway

import (
	"fmt"
	"strings"
	"testing"
)

func TestCompress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"ansi", "\x1b[1;32m   Compiling\x1b[0m foo\n\x1b]0;title\x07done\n", "   Compiling foo\ndone\n"},
		{"repeats folded", "a\nwarn\nwarn\nwarn\nb", "a\nwarn  [×3]\nb"},
		{"progress keeps its last state", "10%\r50%\r100%\nok\n", "100%\nok\n"},
		{"trailing spaces", "x   \ny\t\n", "x\ny\n"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
		{"short output untouched", "one\ntwo", "one\ntwo"},
	}
	for _, tt := range tests {
		if got := Compress(tt.in, DefaultCompress); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	var long strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	got := Compress(long.String(), CompressOptions{MaxLines: 10, HeadLines: 3})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 11 || lines[0] != "line 0" || lines[2] != "line 2" || lines[10] != "line 999" || lines[4] != "line 993" ||
		!strings.HasPrefix(lines[3], "[… 990 lines (") {
		t.Errorf("head and tail:\n%s", got)
	}
}
