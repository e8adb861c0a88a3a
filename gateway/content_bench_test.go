package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/govern"
	"github.com/agentharness/harness/roles"
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

// BenchmarkArguments reads a call's arguments for the policy, as every
// governed call does: "decode" is encoding/json's decoding alone (the
// reference: what the gateway paid before it checked them), "checked"
// adds ambiguity and the tool's names (what it pays now). Small arguments
// (a read), and an edit of 100 KB of text.
func BenchmarkArguments(b *testing.B) {
	names := schemaNames(json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"bytes":{"type":"integer"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{},"newText":{}}}}}}}`))
	text := strings.Repeat("line 42 of the file: the \"quick\" brown fox jumps over the lazy dog\n", 100<<10/68)
	big, _ := json.Marshal(map[string]any{"path": "src/main.go", "edits": []any{map[string]string{"oldText": "x", "newText": text}}})
	for _, c := range []struct {
		name string
		raw  json.RawMessage
	}{
		{"small", json.RawMessage(`{"path":"src/pkg/main.go","bytes":5000,"offset":0.5}`)},
		{"100KB", big},
	} {
		for _, checked := range []bool{false, true} {
			name := c.name + "/decode"
			if checked {
				name = c.name + "/checked"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(c.raw)))
				b.ReportAllocs()
				for b.Loop() {
					if !checked {
						if _, err := decodeArguments(c.raw); err != nil {
							b.Fatal(err)
						}
						continue
					}
					args, err := arguments(c.raw)
					if err == nil {
						err = names.check(args)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStdioCall is one small tool call through ServeStdio, in this
// process, to the fixture upstream (a process of its own), with the
// memory ledger and no logs, in a user's role whose budget the calls do
// not use up: with -cpuprofile, where the gateway's own work on a call
// goes, and its allocations a call. Its time includes the upstream's;
// BenchmarkGatewayLatency in cmd/harness measures what the gateway adds,
// against the same call made straight.
func BenchmarkStdioCall(b *testing.B) {
	dir := b.TempDir()
	roomy := "[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 1000000000000\nmax_cost_usd = 1000000.0\n"
	if err := os.WriteFile(filepath.Join(dir, "roomy.toml"), []byte(roomy), 0o600); err != nil {
		b.Fatal(err)
	}
	gov := govern.New(govern.Options{Rules: testRules(b, roles.Dirs{User: []string{dir}}), Store: budget.NewMemory()})
	f := newFixture(b, func(o *Options) { o.Governor = gov })
	c := f.stdio(b, Identity{Agent: "bench", Session: "bench", StartRole: "roomy"})
	c.initialize(nil)
	args := tool("ctx_read", map[string]any{"bytes": 20})
	for range 100 { // warm up
		c.call("tools/call", args)
	}
	b.ReportAllocs()
	for b.Loop() {
		if text, isErr := toolText(b, c.call("tools/call", args)); isErr || len(text) != 20 {
			b.Fatalf("got %q (error %v)", text, isErr)
		}
	}
}
