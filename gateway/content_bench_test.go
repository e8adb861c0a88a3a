package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkReadToolResult reads a 100 KB text result for charging, as the
// gateway does with every tool result before it is released.
func BenchmarkReadToolResult(b *testing.B) {
	text := strings.Repeat("[0042] compiling src/pkg/file.go: ok (12 ms), \"quoted\" \\ warnings\n", 100<<10/68)
	result, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	b.SetBytes(int64(len(result)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := readToolResult(result)
		if err != nil || len(r.parts(ChargeOptions{})[0].Text) != len(text) {
			b.Fatal(err)
		}
	}
}
