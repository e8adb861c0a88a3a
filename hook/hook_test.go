package hook

import "testing"

// Claude Code names an MCP tool mcp__<server>__<tool>; the server's name
// ends at the first "__" after the prefix.
func TestOrigin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, upstream, upstreamTool string
	}{
		{"Bash", "", ""},
		{"NotebookEdit", "", ""},
		{"mcp__github__create_issue", "github", "create_issue"},
		{"mcp__my_server__list_issues", "my_server", "list_issues"},
		{"mcp__a_b_c__d", "a_b_c", "d"},
		{"mcp__lean__get__all", "lean", "get__all"},
		{"mcp__server-1__ctx_shell", "server-1", "ctx_shell"},
		{"mcp__github", "", ""},
		{"mcp__github__", "", ""},
		{"mcp____create_issue", "", ""},
		{"mcp__", "", ""},
		{"mcp_github__create_issue", "", ""},
		{"MCP__github__create_issue", "", ""},
		{"xmcp__github__create_issue", "", ""},
	} {
		up, tool := Origin(tt.tool)
		if up != tt.upstream || tool != tt.upstreamTool {
			t.Errorf("Origin(%q) = %q, %q; want %q, %q", tt.tool, up, tool, tt.upstream, tt.upstreamTool)
		}
	}
}
