package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkReadToolResult reads a 100 KB text result for charging, as the
// gateway does with every tool result before it is released: "escapes"
// has four escapes a line, "lines" one (its line break), like a file read.
func BenchmarkReadToolResult(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"escapes", "[0042] compiling src/pkg/file.go: ok (12 ms), \"quoted\" \\ warnings\n"},
		{"lines", "line 42 of the file: the quick brown fox jumps over the lazy dog\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			text := strings.Repeat(c.line, 100<<10/len(c.line))
			result, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := readToolResult(result)
				if err != nil || len(r.parts(ChargeOptions{})[0].Text) != len(text) {
					b.Fatal(err)
				}
			}
		})
	}
}
