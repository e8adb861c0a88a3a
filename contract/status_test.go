package contract

import "testing"

func TestPrintable(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"ctx_read", "ctx_read"},
		{"mcp__github__create_issue", "mcp__github__create_issue"},
		{"héllo wörld → ok, 日本語 \\n as typed", "héllo wörld → ok, 日本語 \\n as typed"},
		{"x\ny", `x\ny`},
		{"\x1b[2J\x1b]0;title\a", `\x1b[2J\x1b]0;title\a`},
		{"tab\there\r", `tab\there\r`},
		{"rtl\u202eoverride\u2028line", `rtl\u202eoverride\u2028line`},
		{"c1\u009bcsi, del\x7f", `c1\u009bcsi, del\x7f`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{"\ufffd is printable", "\ufffd is printable"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	st := Status{Role: "x\x1b[2J", Signal: "OK\n"}
	if got := st.StatusLine(); got != `Budget[x\x1b[2J]: tokens 0/0 (0%) | shell 0/0 (0%) | cost $0.00/$0.00 (0%) → OK\n` {
		t.Errorf("status line %q", got)
	}
}
