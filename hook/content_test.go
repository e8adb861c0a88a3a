package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
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
