package main

// What the CLI shows an operator that an agent can put words into: the
// project's files, the names of its tools. None of it may reach the
// operator's terminal as a control sequence (an OSC 52 write of the
// clipboard, a clear screen, a cursor move that hides a line, a
// bidirectional override).

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// unprintable is the characters of s a terminal would not print plainly
// (newlines and tabs aside), and the bytes of s that are not UTF-8.
func unprintable(s string) []string {
	var bad []string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r != '\n' && r != '\t' && !strconv.IsPrint(r)) {
			bad = append(bad, strconv.QuoteRune(r))
		}
		i += size
	}
	return bad
}

// The errors of a project's files quote them (a section's name, a file's
// name): the agent writes both.
func TestAttackLoadErrorsDriveTheTerminal(t *testing.T) {
	t.Parallel()
	osc52 := "\x1b]52;c;cm0gLXJmIH4K\x07" // the clipboard becomes "rm -rf ~"
	for _, tc := range []struct {
		name, file, content string
	}{
		{"section of a role file", ".lean-ctx/roles/evil.toml", "[\"\\u001b]52;c;cm0gLXJmIH4K\\u0007\"]\nx = 1\n"},
		{"name of a policy file", ".lean-ctx/policies/p" + osc52 + ".rego", "package harness.custom.x\ndeny contains \"a\" if {\n"},
		{"name of a role file", ".lean-ctx/roles/r\x1b[2J\x1b[H.toml", "[role]\ndescription = 5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home, project := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(project, filepath.FromSlash(tc.file)), tc.content)
			for _, args := range [][]string{{"check"}, {"sessions"}, {"decide", "--tool", "ctx_read"}} {
				out, errOut, code := harnessIn(t, home, nil, append(args, "--project", project)...)
				if code == exitOK {
					t.Fatalf("harness %s: exit 0, want the load's errors\n%s%s", args[0], out, errOut)
				}
				if bad := unprintable(out + errOut); len(bad) > 0 {
					t.Errorf("harness %s writes %s to the terminal:\n%q", args[0], strings.Join(bad, " "), out+errOut)
				}
			}
		})
	}
}
