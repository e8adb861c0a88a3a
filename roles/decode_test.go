package roles

import (
	"slices"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		src  string
		want []string // each error, as printed, in order
	}{
		{
			name: "unknown key with suggestion",
			file: "auditor.toml",
			src:  "[role]\ndescription = \"x\"\n\n[limits]\nmax_context_tokens = 10\nmax_shell = 3\n",
			want: []string{`auditor.toml:6:1: unknown key "max_shell" in [limits] (did you mean "max_shell_invocations"?)`},
		},
		{
			name: "unknown section",
			file: "a.toml",
			src:  "[limit]\nmax_context_tokens = 1\n",
			want: []string{`a.toml:1:1: unknown section [limit] (did you mean [limits]?)`},
		},
		{
			name: "wrong type",
			file: "a.toml",
			src:  "[limits]\nmax_context_tokens = \"lots\"\n",
			want: []string{`a.toml:2:1: limits.max_context_tokens: want a whole number, got string "lots"`},
		},
		{
			name: "out of range values, all reported in order",
			file: "a.toml",
			src:  "[limits]\n  warn_at_percent = 120\n  block_at_percent = 0\n  max_cost_usd = -1.5\n",
			want: []string{
				`a.toml:2:3: limits.warn_at_percent: 120 is out of range: want 0 to 100`,
				`a.toml:3:3: limits.block_at_percent: 0 is out of range: want 1 to 100, or 255 to never block`,
				`a.toml:4:3: limits.max_cost_usd: -1.5 is out of range: want 0 to 1e+09`,
			},
		},
		{
			name: "unknown shell policy",
			file: "a.toml",
			src:  "[role]\nshell_policy = \"sometimes\"\n",
			want: []string{`a.toml:2:1: role.shell_policy: unknown shell_policy "sometimes": want "track", "compress" or "deny"`},
		},
		{
			name: "pattern list with a number",
			file: "a.toml",
			src:  "[tools]\nallowed = [\n  \"ctx_read\",\n  7,\n]\n",
			want: []string{`a.toml:2:1: tools.allowed: item 2: want a string, got integer 7`},
		},
		{
			name: "patterns with control characters",
			file: "a.toml",
			src:  "[tools]\nallowed = [\"*\"]\ndenied = [\"ok\", \"mcp__prod__\\u0000*\"]\nask = [\"a\\u007fb\", \"c\\u0085\"]\n",
			want: []string{
				`a.toml:3:1: tools.denied: item 2: "mcp__prod__\x00*" is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)`,
				`a.toml:4:1: tools.ask: item 1: "a\x7fb" is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)`,
			},
		},
		{
			// A format character names no tool either: a bidirectional
			// override shows "ctx_\u202edaer" as ctx_read, a zero-width
			// space hides inside a name.
			name: "patterns with format characters",
			file: "a.toml",
			src:  "[tools]\nallowed = [\"ctx_\\u202edaer\"]\ndenied = [\"ok\", \"ctx_\\u200bshell\"]\nask = [\"a\\ufeffb\"]\n",
			want: []string{
				`a.toml:2:1: tools.allowed: item 1: "ctx_\u202edaer" is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)`,
				`a.toml:3:1: tools.denied: item 2: "ctx_\u200bshell" is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)`,
				`a.toml:4:1: tools.ask: item 1: "a\ufeffb" is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)`,
			},
		},
		{
			name: "name must match the file",
			file: "auditor.toml",
			src:  "[role]\nname = \"security-auditor\"\n",
			want: []string{`auditor.toml:2:1: role.name "security-auditor" does not match the file name "auditor" (a role is named by its file)`},
		},
		{
			name: "path-like name",
			file: "x.toml",
			src:  "[role]\nname = \"../evil\"\n",
			want: []string{`x.toml:2:1: role.name: invalid role name "../evil": use 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'`},
		},
		{
			name: "path-like parent",
			file: "x.toml",
			src:  "[role]\ninherits = \"../../etc/passwd\"\n",
			want: []string{`x.toml:2:1: role.inherits: invalid role name "../../etc/passwd": use 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'`},
		},
		{
			name: "file name with a space",
			file: "my role.toml",
			src:  "",
			want: []string{`my role.toml: file name: invalid role name "my role": use 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'`},
		},
		{
			name: "syntax error",
			file: "a.toml",
			src:  "[role]\ndescription = \"unterminated\n",
			want: []string{`a.toml:2:28: TOML syntax: strings cannot contain newlines`},
		},
		{
			name: "section that is not a table",
			file: "a.toml",
			src:  "tools = [\"ctx_read\"]\n",
			want: []string{`a.toml:1:1: "tools" must be a table ([tools]), not an array`},
		},
		{
			name: "dotted keys are located too",
			file: "a.toml",
			src:  "# comment\nlimits.max_context_tokens = 1.5\n",
			want: []string{`a.toml:2:1: limits.max_context_tokens: want a whole number, got float 1.5`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := Parse(tt.file, []byte(tt.src), SourceProject)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	src := `
[role]
name = "security-auditor"
inherits = "reviewer"
description = "Security-focused code review"
shell_policy = "deny"

[tools]
allowed = ["ctx_read", "ctx_search", "ctx_tree", "ctx_review", "ctx_session"]
denied = ["ctx_edit", "ctx_shell", "ctx_execute"]

[limits]
max_context_tokens = 100000
max_shell_invocations = 0
max_cost_usd = 2.0

[io]
anything = "kept"
`
	d, errs := Parse("security-auditor.toml", []byte(src), SourceProject)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if d.Name != "security-auditor" || d.Inherits != "reviewer" {
		t.Errorf("name %q inherits %q", d.Name, d.Inherits)
	}
	checks := map[string]any{
		"role.shell_policy":            ShellDeny,
		"limits.max_cost_usd":          int64(2_000_000),
		"limits.max_shell_invocations": int64(0),
		"io.anything":                  "kept",
	}
	for k, want := range checks {
		if got := d.Values[k]; got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	if _, ok := d.Values["limits.warn_at_percent"]; ok {
		t.Error("a key the file leaves out must stay unset, for inheritance")
	}
}

func TestMaxCostIsExactMicros(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]int64{
		"0.1": 100_000, "5.3": 5_300_000, "0.12": 120_000, "5": 5_000_000, "0.000001": 1,
	} {
		d, errs := Parse("a.toml", []byte("[limits]\nmax_cost_usd = "+src), SourceUser)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := d.Values["limits.max_cost_usd"]; got != want {
			t.Errorf("max_cost_usd = %s: got %v micros, want %d", src, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames {
		src, _ := BuiltinSource(name)
		f.Add(string(src))
	}
	f.Add("[role]\ninherits = \"x\"\n[limits]\nmax_cost_usd = 1e400\n")
	f.Add("[tools]\nallowed = [[1]]\n[[io]]\n")
	f.Fuzz(func(t *testing.T, src string) {
		d, errs := Parse("f.toml", []byte(src), SourceUser)
		for _, e := range errs {
			if !strings.HasPrefix(e.Error(), "f.toml") {
				t.Fatalf("error does not name the file: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		// An accepted file resolves, and the role it gives is within range.
		d.Name = "fuzzed"
		set, err := LoadDefs(d)
		if err != nil {
			if d.Inherits == "" {
				t.Fatalf("a parentless accepted file failed to resolve: %v", err)
			}
			return
		}
		r, _ := set.Get("fuzzed")
		switch r.ShellPolicy {
		case ShellTrack, ShellCompress, ShellDeny:
		default:
			t.Fatalf("shell policy %q", r.ShellPolicy)
		}
		l := r.Limits
		if l.MaxContextTokens < 0 || l.MaxShellInvocations < 0 || l.MaxCostMicros < 0 ||
			l.WarnAtPercent < 0 || l.WarnAtPercent > 100 ||
			(l.BlockAtPercent < 1 || l.BlockAtPercent > 100) && l.BlockAtPercent != NeverBlock {
			t.Fatalf("limits out of range: %+v", l)
		}
		for _, p := range append(slices.Clone(r.Allowed), r.Denied...) {
			if strings.TrimSpace(p) == "" {
				t.Fatalf("empty pattern accepted: %q", r.Allowed)
			}
		}
	})
}

// No error of a role file quotes more of it than the offending token, and
// that cut short: a long value, key or name is not printed whole.
func TestErrorsQuoteLittle(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	for _, tt := range []struct{ name, file, src string }{
		{"a string for a number", "a.toml", "[limits]\nmax_context_tokens = \"" + secret + "\"\n"},
		{"a string for true or false", "a.toml", "[role]\nprivileged = \"" + secret + "\"\n"},
		{"a shell policy", "a.toml", "[role]\nshell_policy = \"" + secret + "\"\n"},
		{"a pattern with a space", "a.toml", "[tools]\nallowed = [\"" + secret + " x\"]\n"},
		{"a role name", "a.toml", "[role]\nname = \"" + secret + "\"\n"},
		{"a parent", "a.toml", "[role]\ninherits = \"" + secret + "\"\n"},
		{"an unknown key", "a.toml", "[limits]\n\"" + secret + "\" = 1\n"},
		{"an unknown section", "a.toml", "[\"" + secret + "\"]\n"},
		{"a section that is not a table", "a.toml", "role = \"" + secret + "\"\n"},
		{"a bare value", "a.toml", "[role]\ndescription = " + secret + "\n"},
		{"a key defined twice", "a.toml", "[role]\n\"" + secret + "\" = 1\n\"" + secret + "\" = 2\n"},
		{"a file name", strings.ReplaceAll(secret, "/", "_") + ".x.toml", "[role]\n"},
	} {
		_, errs := Parse(tt.file, []byte(tt.src), SourceProject)
		msg := strings.ReplaceAll(errs.Error(), tt.file, "FILE")
		if len(errs) == 0 || strings.Contains(msg, secret) || strings.Contains(msg, strings.ReplaceAll(secret, "/", "_")) {
			t.Errorf("%s: %v", tt.name, msg)
		}
	}
}
