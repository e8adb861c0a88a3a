package main

// What the CLI shows an operator that an agent can put words into: the
// project's files, the names of its tools. None of it may reach the
// operator's terminal as a control sequence (an OSC 52 write of the
// clipboard, a clear screen, a cursor move that hides a line, a
// bidirectional override).

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"slices"
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

// A tool's name is the agent's: printed as stored (--json), it must still
// not drive the terminal. JSON lets C1 controls (an 8-bit OSC, U+009D, to
// an 8-bit string terminator, U+009C), DEL and bidirectional overrides
// through unescaped; the lines stay the same JSON with them escaped.
func TestAttackJSONOutputDrivesTheTerminal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	tool := "evil\u009d52;c;cm0gLXJmIH4K\u009c\u202ellehs_xtc\x7f"
	if out, errOut, code := harnessIn(t, home, nil, "decide", "--role", "reviewer", "--tool", tool, "--record", "--session", "S", "--agent", "a"); code != exitDenied {
		t.Fatalf("decide: exit %d, want %d\n%s%s", code, exitDenied, out, errOut)
	}
	for _, args := range [][]string{{"report", "--by", "tool", "--json"}, {"decide", "--role", "reviewer", "--tool", tool, "--json"}} {
		out, errOut, _ := harnessIn(t, home, nil, args...)
		if bad := unprintable(out); len(bad) > 0 || !json.Valid([]byte(out)) {
			t.Errorf("harness %s writes %s to the terminal:\n%q%s", args[0], strings.Join(bad, " "), out, errOut)
		}
	}
	for _, args := range [][]string{{"events", "--json"}, {"log", "--json"}} {
		out, errOut, code := harnessIn(t, home, nil, args...)
		if code != exitOK || out == "" {
			t.Fatalf("harness %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		if bad := unprintable(out); len(bad) > 0 {
			t.Errorf("harness %s writes %s to the terminal:\n%q", strings.Join(args, " "), strings.Join(bad, " "), out)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var e struct {
				Tool  string `json:"tool"`
				Input struct {
					Tool string `json:"tool"`
				} `json:"input"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil || (e.Tool != tool && e.Input.Tool != tool) {
				t.Errorf("harness %s: the line is not the same JSON (%v): %q", strings.Join(args, " "), err, line)
			}
		}
	}
}

// harness test prints what a project's policy tests print (print's
// output, their failures' values) and the files they are in: all of it
// is the repository's to write, in every output format.
func TestAttackHarnessTestOutputDrivesTheTerminal(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := filepath.Join(project, ".lean-ctx", "policies")
	writeFile(t, filepath.Join(dir, "evil\x1b[2J.rego"), "package harness.custom.evil\n\ndeny contains \"no\" if input.tool == \"x\"\n")
	writeFile(t, filepath.Join(dir, "evil_test.rego"), `package harness.custom.evil_test

import data.harness.custom.evil

test_prints if {
	print("\u001b]52;c;cm0gLXJmIH4K\u0007 \u009d52;c;eA==\u009c \u202eorez")
	count(evil.deny) == 0
}

test_fails if {
	print("\u001b[2J\u001b[H")
	evil.deny with input as {"tool": "x"}
	"\u001b[31m" == "\u202e"
}
`)
	for _, args := range [][]string{{"-v"}, {}, {"--format", "json"}, {"--format", "junit"}, {"--format", "github"}, {"--coverage"}, {"--coverage", "--format", "json"}} {
		out, errOut, code := harness(t, nil, append([]string{"test", "--project", project}, args...)...)
		if code != exitDenied {
			t.Errorf("harness test %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, exitDenied, out, errOut)
		}
		if bad := unprintable(out + errOut); len(bad) > 0 {
			t.Errorf("harness test %s writes %s to the terminal:\n%q", strings.Join(args, " "), strings.Join(bad, " "), out+errOut)
		}
		if slices.Contains(args, "json") && !json.Valid([]byte(out)) {
			t.Errorf("harness test %s: not JSON:\n%s", strings.Join(args, " "), out)
		}
		if slices.Contains(args, "junit") {
			if err := xml.Unmarshal([]byte(out), new(struct{})); err != nil {
				t.Errorf("harness test --format junit: not XML (%v):\n%s", err, out)
			}
		}
	}
}
