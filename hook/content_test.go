package hook

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/govern"
)

// What each golden PostToolUse payload (testdata/hooks/post-*.json) is
// charged for: what of the tool's response reaches the model.
func TestContentGolden(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../testdata/hooks/post-*.json")
	if len(files) == 0 {
		t.Fatal("no payloads")
	}
	var b strings.Builder
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := gjson.ParseBytes(raw)
		content := Content(p.Get("tool_name").String(), p.Get("tool_response"))
		if p.Get("hook_event_name").String() == "PostToolUseFailure" {
			content = p.Get("error").String()
		}
		fmt.Fprintf(&b, "%s (%s): %q\n", filepath.Base(f), p.Get("tool_name"), content)
	}
	golden(t, "content.txt", b.String())
}

// Responses of a shape a tool's extractor does not expect are charged
// every string they hold, never nothing.
func TestContentUnexpectedShapes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ tool, response, want string }{
		{"Read", `"plain text"`, "plain text"},
		{"Read", `{"type": "other", "file": {"content": "x"}}`, "x"},
		{"Bash", `["a", "b"]`, "a\nb"},
		{"Grep", `{"mode": "count", "content": "main.go:3", "filenames": []}`, "main.go:3"},
		{"mcp__s__t", `"a string result"`, "a string result"},
		{"mcp__s__t", `{"content": [{"type": "text", "text": "t"}, {"type": "resource", "resource": {"uri": "file:///a", "text": "r"}}]}`, "t\nr"},
		{"mcp__s__t", `{"answer": "42"}`, "42"},
		{"SomeNewTool", `{"a": {"b": "deep"}, "n": 1}`, "deep"},
		{"Edit", `{"structuredPatch": [{"lines": ["-a", "+b"]}, {"lines": [" c"]}]}`, "-a\n+b\n c"},
		// What a client shows of a result: a resource link's name, address
		// and description; the structured content as its JSON.
		{"mcp__s__t", `[{"type": "resource_link", "uri": "file:///x", "name": "x", "description": "a long description"}]`, "x\nfile:///x\na long description"},
		{"mcp__s__t", `{"content": [{"type": "text", "text": "ok"}], "structuredContent": {"rows": ["a", "b"]}}`, "ok\n{\"rows\": [\"a\", \"b\"]}"},
		{"mcp__s__t", `{"content": [], "structuredContent": {"rows": 1}}`, "{\"rows\": 1}"},
	} {
		if got := Content(tt.tool, gjson.Parse(tt.response)); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.tool, tt.response, got, tt.want)
		}
	}
}

// A text file read reaches the model with a number before each line (as
// cat -n writes them), which costs tokens too: 2,000 empty lines are
// 2,000 numbers, not nothing.
func TestReadIsChargedItsLineNumbers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, response, want string
	}{
		{"from the start", `{"type": "text", "file": {"content": "a\n\nb\n", "startLine": 1}}`, "     1\ta\n     2\t\n     3\tb"},
		{"from line 99", `{"type": "text", "file": {"content": "x\ny", "startLine": 99}}`, "    99\tx\n   100\ty"},
		{"no start line", `{"type": "text", "file": {"content": "x"}}`, "     1\tx"},
		{"an empty file", `{"type": "text", "file": {"content": "", "startLine": 1}}`, ""},
		{"past a million lines", `{"type": "text", "file": {"content": "x", "startLine": 1234567}}`, "1234567\tx"},
	} {
		if got := Content("Read", gjson.Parse(tt.response)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	empty := `{"type": "text", "file": {"content": "` + strings.Repeat("\\n", 2000) + `", "startLine": 1}}`
	if got := Content("Read", gjson.Parse(empty)); strings.Count(got, "\t") != 2000 || !strings.HasSuffix(got, "  2000\t") {
		t.Errorf("2,000 empty lines: %d numbered lines, ending %q", strings.Count(got, "\t"), got[max(len(got)-12, 0):])
	}
}

// An image reaches the model and fills its context as the gateway
// charges it (width × height / 750 tokens, at most 1,600), but through
// the hook it was charged nothing: an MCP tool's image blocks, an image
// Read. An agent that renders what it wants to read as images (or whose
// MCP server answers with them) read for free, a hundred images being
// 160,000 tokens. Now each is charged as the gateway charges it.
func TestAttackImagesThroughTheHookAreFree(t *testing.T) {
	t.Parallel()
	pngOf := func(w, h uint32) string { // a PNG's header, of w × h pixels
		chunk := []byte("IHDR")
		chunk = binary.BigEndian.AppendUint32(chunk, w)
		chunk = binary.BigEndian.AppendUint32(chunk, h)
		chunk = append(chunk, 8, 2, 0, 0, 0)
		b := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d"), chunk...)
		b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
		return base64.StdEncoding.EncodeToString(append(b, make([]byte, 64)...))
	}
	big, small := pngOf(1568, 1568), pngOf(75, 10)
	images := strings.Repeat(`{"type": "image", "data": "`+big+`", "mimeType": "image/png"},`, 100)
	audio := base64.StdEncoding.EncodeToString(make([]byte, 10<<10))
	for _, tt := range []struct {
		name, tool, response string
		want                 int64 // the tokens of what is not text
	}{
		{"an MCP tool's image blocks", "mcp__s__render", `[` + images + `{"type": "text", "text": "ok"}]`, 100 * 1600},
		{"an MCP tool's result object", "mcp__s__render", `{"content": [{"type": "image", "data": "` + small + `", "mimeType": "image/png"}]}`, 1},
		{"an image whose size cannot be read", "mcp__s__render", `[{"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"}]`, 1600},
		{"an MCP tool's audio", "mcp__s__speak", `[{"type": "audio", "data": "` + audio + `", "mimeType": "audio/wav"}]`, 10 * 32},
		{"an embedded resource's blob", "mcp__s__get", `[{"type": "resource", "resource": {"uri": "x:a", "mimeType": "image/png", "blob": "` + big + `"}}]`, 1600},
		{"a resource read through Claude Code", "ReadMcpResourceTool", `{"contents": [{"uri": "x:a", "mimeType": "image/png", "blob": "` + big + `"}]}`, 1600},
		{"an image read", "Read", `{"type": "image", "file": {"base64": "` + big + `", "type": "image/png", "originalSize": 90, "dimensions": {"originalWidth": 1568, "originalHeight": 1568, "displayWidth": 1568, "displayHeight": 1568}}}`, 1600},
		{"a text read", "Read", `{"type": "text", "file": {"content": "", "startLine": 1}}`, 0},
	} {
		store := budget.NewMemory()
		h := &ClaudeCode{Gov: govern.New(govern.Options{Rules: builtinRules(t), Store: store})}
		payload := `{"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "` + tt.tool + `", "tool_input": {}, "tool_response": ` + tt.response + `}`
		if r := h.Handle(context.Background(), []byte(payload)); r.Exit != 0 {
			t.Fatalf("%s: %+v", tt.name, r)
		}
		c, err := store.Get(context.Background(), budget.Key{Agent: Agent, Session: "s"}, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := Media(tt.tool, gjson.Parse(tt.response), Options{}); got != tt.want {
			t.Errorf("%s: Media %d, want %d", tt.name, got, tt.want)
		}
		if c.Tokens < tt.want || c.Tokens > tt.want+2 { // and the text's ("ok")
			t.Errorf("%s: charged %d context tokens, want %d", tt.name, c.Tokens, tt.want)
		}
	}
}
