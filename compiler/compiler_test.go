package compiler

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/agentharness/harness/roles"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run go test ./compiler -update if the change is intended\n got: %.400s", name, got)
	}
}

func builtinSet(t *testing.T) *roles.Set {
	t.Helper()
	set, err := roles.Load(roles.Dirs{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestBuiltinDocumentGolden(t *testing.T) {
	b, err := NewBundle(Compile(builtinSet(t), DefaultConfig()), []Module{{Name: "p.rego", Source: []byte("package harness\n")}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "builtin.data.json", b.Data)
	golden(t, "builtin.manifest", b.Manifest)
}

func TestCompileIsDeterministic(t *testing.T) {
	t.Parallel()
	var first []byte
	for i := range 20 {
		// Load afresh every time: map order differs between loads.
		got, err := Compile(builtinSet(t), DefaultConfig()).JSON()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatal("two compilations of the same roles gave different bytes")
		}
	}
}

func TestNewMatcher(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]string{"ctx_read", "ctx_*", "*_view", "mcp__*__list", "a?b*c", "*", "ctx_read", "**"})
	if !m.All {
		t.Error("'*' must set all")
	}
	if !m.Exact["ctx_read"] || len(m.Exact) != 1 {
		t.Errorf("exact %v", m.Exact)
	}
	if !slices.Equal(m.Patterns, []string{"*", "**", "*_view", "a?b*c", "ctx_*", "ctx_read", "mcp__*__list"}) {
		t.Errorf("patterns %v (sorted, duplicates dropped)", m.Patterns)
	}
	if want := `^(?s:.*|.*.*|.*_view|a\?b.*c|ctx_.*|ctx_read|mcp__.*__list)$`; m.Regex != want {
		t.Errorf("regex %s, want %s", m.Regex, want)
	}
	empty := NewMatcher(nil)
	if empty.All || empty.Match("x") || empty.Patterns == nil || regexp.MustCompile(empty.Regex).MatchString("") {
		t.Errorf("empty matcher %+v", empty)
	}
}

// A matcher's regular expression matches exactly the names its patterns
// do: every character but '*' literal (regular expression and glob
// metacharacters, newlines, bytes that are not UTF-8), '*' any run of
// characters, newlines included.
func TestMatcherRegex(t *testing.T) {
	t.Parallel()
	patterns := []string{"ctx_read", "ctx_*", "*_view", "mcp__*__list", "a?b*c", "[x]*", "(a|b)", "x.y", "^z$", `\d`, "line\n*", "é*ü", "*\x00*", "**x**"}
	names := []string{"", "ctx_read", "ctx_", "ctx_x\nmore", "a_view", "_view", "mcp__fs__list", "mcp____list", "mcp__x__lis",
		"a?bzc", "axbzc", "[x]", "[x]yz", "x", "(a|b)", "a", "x.y", "xzy", "^z$", "z", `\d`, "7", "line\n", "line\n\nx", "éü", "éxü",
		"\x00", "a\x00b", "\xff", "xx", "yxy", "x"}
	for _, p := range patterns {
		m := NewMatcher([]string{p})
		re := regexp.MustCompile(m.Regex)
		for _, n := range names {
			if got, want := re.MatchString(n), m.Match(n); got != want {
				t.Errorf("pattern %q, name %q: regex %v, Match %v", p, n, got, want)
			}
		}
	}
}

// FuzzMatcherRegex holds a matcher's regular expression equal to its
// patterns on arbitrary patterns and names (of UTF-8: the TOML decoder
// refuses a role file that is not, and JSON-RPC's decoders replace a byte
// that is not).
func FuzzMatcherRegex(f *testing.F) {
	f.Add("ctx_*", "*_x*y", "ctx_read")
	f.Add("a?b*", "[*]", "a?bcd")
	f.Add("*\n*", "", "line\nx")
	f.Fuzz(func(t *testing.T, p1, p2, name string) {
		if !utf8.ValidString(p1) || !utf8.ValidString(p2) || !utf8.ValidString(name) {
			return // role files and tool names are UTF-8
		}
		m := NewMatcher([]string{p1, p2})
		re, err := regexp.Compile(m.Regex)
		if err != nil {
			t.Fatalf("patterns %q %q: %v", p1, p2, err)
		}
		if got, want := re.MatchString(name), m.Match(name); got != want {
			t.Fatalf("patterns %q %q, name %q: regex %v, Match %v", p1, p2, name, got, want)
		}
	})
}

func TestThresholds(t *testing.T) {
	t.Parallel()
	p := func(n int64) *int64 { return &n }
	tests := []struct {
		limit, warn, block int64
		want               Threshold
	}{
		{200000, 80, 100, Threshold{WarnAt: 160000, ExhaustedAt: p(200000), Admits: p(200000)}},
		{100, 80, 100, Threshold{WarnAt: 80, ExhaustedAt: p(100), Admits: p(100)}},
		{3, 80, 100, Threshold{WarnAt: 3, ExhaustedAt: p(3), Admits: p(3)}}, // 2*100 < 3*80; 3*100 >= 240
		{7, 50, 90, Threshold{WarnAt: 4, ExhaustedAt: p(7), Admits: p(6)}},  // ceil(3.5), ceil(6.3), floor(6.3)
		{0, 80, 100, Threshold{WarnAt: 1, Admits: p(0)}},
		{100, 80, 255, Threshold{WarnAt: 80}},
		{100, 0, 100, Threshold{WarnAt: 0, ExhaustedAt: p(100), Admits: p(100)}},
		{1000, 90, 50, Threshold{WarnAt: 900, ExhaustedAt: p(500), Admits: p(500)}}, // warning above the block
	}
	for _, tt := range tests {
		got := NewThreshold(tt.limit, tt.warn, tt.block)
		if got.PercentOf != max(tt.limit, 1) {
			t.Errorf("NewThreshold(%d, %d, %d): percent of %d", tt.limit, tt.warn, tt.block, got.PercentOf)
		}
		same := got.WarnAt == tt.want.WarnAt &&
			(got.ExhaustedAt == nil) == (tt.want.ExhaustedAt == nil) && (got.ExhaustedAt == nil || *got.ExhaustedAt == *tt.want.ExhaustedAt) &&
			(got.Admits == nil) == (tt.want.Admits == nil) && (got.Admits == nil || *got.Admits == *tt.want.Admits)
		if !same {
			t.Errorf("NewThreshold(%d, %d, %d) = %+v", tt.limit, tt.warn, tt.block, got)
		}
		// The thresholds must give the contract's levels for every usage.
		for used := int64(0); used <= tt.limit*3+3; used++ {
			if got, want := levelAt(got, used), contractLevel(tt.limit, tt.warn, tt.block, used); got != want {
				t.Errorf("limit %d warn %d block %d used %d: %s, contract says %s", tt.limit, tt.warn, tt.block, used, got, want)
			}
			if ok := used < got.OKBelow; ok != (levelAt(got, used) == "OK") {
				t.Errorf("limit %d warn %d block %d used %d: below ok_below %d is %v, level %s", tt.limit, tt.warn, tt.block, used, got.OKBelow, ok, levelAt(got, used))
			}
			admitted := got.Admits == nil || used+1 <= *got.Admits
			if want := tt.block > 100 || used+1 <= tt.limit*tt.block/100; admitted != want {
				t.Errorf("limit %d block %d used %d: admitted %v, contract says %v", tt.limit, tt.block, used, admitted, want)
			}
		}
	}
}

// levelAt reads a threshold as the policy does (level in harness.rego).
func levelAt(t Threshold, used int64) string {
	switch {
	case t.ExhaustedAt != nil && used >= *t.ExhaustedAt:
		return "EXHAUSTED"
	case used >= t.WarnAt:
		return "WARNING"
	}
	return "OK"
}

// contractLevel is rule 5 of the contract, as written there.
func contractLevel(limit, warn, block, used int64) string {
	switch {
	case limit > 0 && block <= 100 && used*100 >= limit*block:
		return "EXHAUSTED"
	case limit > 0 && used*100 >= limit*warn, limit == 0 && used > 0:
		return "WARNING"
	}
	return "OK"
}

// The ceiling of agents without a max_role is the built-in coder, debugger
// and reviewer together, as the user's files leave them: it covers them
// and every narrower role, never a privileged role or a way above them,
// for the built-ins and a set of 50 custom roles alike.
func TestDefaultCeiling(t *testing.T) {
	t.Parallel()
	doc := Compile(builtinSet(t), DefaultConfig())
	if l := doc.Ceiling.Limits; l.Tokens != 200000 || l.Shell != 200 || l.CostMicros != 5_000_000 || l.BlockPercent != 100 {
		t.Errorf("ceiling limits %+v", l)
	}
	if want := map[string]bool{"coder": true, "debugger": true, "reviewer": true}; !maps.Equal(doc.Ceiling.Covers, want) {
		t.Errorf("the built-ins within the ceiling: %v; want %v", doc.Ceiling.Covers, want)
	}

	// 50 custom roles around the ceiling: each limit at, below and above
	// it, every tool or a few, each shell policy, privileged or not.
	var defs []*roles.Def
	want := map[string]bool{"coder": true, "debugger": true, "reviewer": true}
	for i := range 50 {
		tokens, shell, cost, block := []int64{150000, 200000, 200001}[i%3], []int64{0, 200, 201}[i/3%3], []string{"4.5", "5.0", "5.01"}[i/9%3], []int64{90, 100, 255}[i%5%3]
		allowed := []string{`["*"]`, `["ctx_read", "ctx_*"]`}[i/2%2]
		privileged := i%11 == 0
		src := fmt.Sprintf("[role]\nprivileged = %v\nshell_policy = %q\n[tools]\nallowed = %s\ndenied = [\"zz_nothing\"]\n[limits]\nmax_context_tokens = %d\nmax_shell_invocations = %d\nmax_cost_usd = %s\nblock_at_percent = %d\n",
			privileged, []string{"track", "compress", "deny"}[i%3], allowed, tokens, shell, cost, block)
		name := fmt.Sprintf("custom-%02d", i)
		d, errs := roles.Parse(name+".toml", []byte(src), roles.SourceUser)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		defs = append(defs, d)
		if tokens <= 200000 && shell <= 200 && cost != "5.01" && block <= 100 && !privileged {
			want[name] = true
		}
	}
	set, err := roles.LoadDefs(defs...)
	if err != nil {
		t.Fatal(err)
	}
	doc = Compile(set, DefaultConfig())
	if !maps.Equal(doc.Ceiling.Covers, want) {
		for name := range doc.Roles {
			if doc.Ceiling.Covers[name] != want[name] {
				t.Errorf("%s: within the ceiling %v, want %v", name, doc.Ceiling.Covers[name], want[name])
			}
		}
	}
	if len(want) < 10 || len(want) > 40 {
		t.Errorf("%d roles within the ceiling: the set does not test both sides", len(want))
	}

	// A user who raises a built-in raises the ceiling; a privileged
	// built-in is not part of it.
	coder, _ := roles.Parse("coder.toml", []byte("[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 900000\n"), roles.SourceUser)
	reviewer, _ := roles.Parse("reviewer.toml", []byte("[role]\ninherits = \"reviewer\"\nprivileged = true\n"), roles.SourceUser)
	set, err = roles.LoadDefs(coder, reviewer)
	if err != nil {
		t.Fatal(err)
	}
	doc = Compile(set, DefaultConfig())
	if doc.Ceiling.Limits.Tokens != 900000 || doc.Ceiling.Covers["reviewer"] || !doc.Ceiling.Covers["coder"] {
		t.Errorf("an adjusted coder and a privileged reviewer: %+v", doc.Ceiling)
	}
}

func TestBundleWrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	b, err := NewBundle(Compile(builtinSet(t), DefaultConfig()), []Module{{Name: "b.rego", Source: []byte("package harness\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".manifest", "b.rego", "data.json"}) {
		t.Errorf("bundle files %v", names)
	}
	for _, name := range []string{"../escape.rego", "/abs.rego", "a/../../b.rego", "x.txt"} {
		bad := &Bundle{Modules: []Module{{Name: name}}}
		if err := bad.Write(dir); err == nil {
			t.Errorf("module name %q was written", name)
		}
	}
	sub := &Bundle{Modules: []Module{{Name: "policies/project/p.rego", Source: []byte("package harness.custom.p\n")}}}
	if err := sub.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "policies", "project", "p.rego")); err != nil {
		t.Error(err)
	}
}
