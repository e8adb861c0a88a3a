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
	} {
		if got := Content(tt.tool, gjson.Parse(tt.response)); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.tool, tt.response, got, tt.want)
		}
	}
}
