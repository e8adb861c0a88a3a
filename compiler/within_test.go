package compiler

import (
	"maps"
	"slices"
	"testing"

	"github.com/agentharness/harness/internal/race"
	"github.com/agentharness/harness/internal/testroles"
)

// soundStride is how sparsely the soundness grids below sample their
// cases under the race detector (see race.Sample): they check logic, not
// concurrency, and make test-grids runs them whole without it.
const soundStride = 8

func TestCoveredBy(t *testing.T) {
	for _, tt := range []struct {
		p, q string
		want bool
	}{
		{"ctx_read", "ctx_read", true},
		{"ctx_read", "*", true},
		{"ctx_read", "ctx_*", true},
		{"ctx_read", "*_read", true},
		{"ctx_read", "*x_r*", true},
		{"ctx_read", "ctx_edit", false},
		{"ctx_*", "*", true},
		{"ctx_*", "ctx_*", true},
		{"ctx_*", "c*", true},
		{"ctx_*", "ctx_read", false},
		{"ctx_*", "*_read", false}, // ctx_edit matches the first only
		{"mcp__*__read", "mcp__*", true},
		{"mcp__*__read", "*__read", true},
		{"mcp__*__read", "*__*", true},
		{"mcp__*__read", "mcp__fs__*", false},
		{"*", "ctx_*", false},
		{"*", "*", true},
		{"*a*", "*", true},
		{"*a*", "*a*", true},
		{"*a*", "a*", false},
		{"a?b*", "a?*", true}, // '?' is a literal
		{"a?b*", "a*b*", true},
		{"axb", "a?b*", false},
		// A NUL is a character like any other: it covers no '*'.
		{"mcp__prod__*", "mcp__prod__\x00*", false},
		{"a*", "a\x00", false},
		{"*", "\x00", false},
		{"a\x00b", "a\x00*", true},
		{"a\x00*", "a*", true},
	} {
		if got := coveredBy(tt.p, []string{tt.q}); got != tt.want {
			t.Errorf("coveredBy(%q, %q) = %v, want %v", tt.p, tt.q, got, tt.want)
		}
	}
}

// coveredBy never claims more than is true: whenever q covers p, every name
// of a small alphabet that p matches, q matches too.
func TestCoveredByIsSound(t *testing.T) {
	var patterns []string
	var names []string
	var grow func(prefix string, n int, stars bool)
	grow = func(prefix string, n int, stars bool) {
		if stars {
			patterns = append(patterns, prefix)
		} else {
			names = append(names, prefix)
		}
		if n == 0 {
			return
		}
		for _, c := range []string{"a", "b", "\x00"} {
			grow(prefix+c, n-1, stars)
		}
		if stars {
			grow(prefix+"*", n-1, stars)
		}
	}
	grow("", 4, true)
	grow("", 5, false)
	patterns = slices.DeleteFunc(patterns, func(p string) bool { return p == "" })
	match := func(p, n string) bool { return NewMatcher([]string{p}).Match(n) }
	claims, keep := 0, race.Sample(soundStride)
	for _, p := range patterns {
		for _, q := range patterns {
			if !keep() || !coveredBy(p, []string{q}) {
				continue
			}
			claims++
			for _, n := range names {
				if match(p, n) && !match(q, n) {
					t.Fatalf("coveredBy(%q, %q), but %q matches only the first", p, q, n)
				}
			}
		}
	}
	if claims < len(patterns)*2/race.Stride(soundStride) {
		t.Fatalf("only %d inclusions found among %d patterns", claims, len(patterns))
	}
}

func TestWithin(t *testing.T) {
	set := testroles.Set(t, map[string]string{
		"reader":      "[tools]\nallowed = [\"ctx_read\", \"ctx_search\"]\n[limits]\nmax_context_tokens = 1000\nmax_shell_invocations = 0\nmax_cost_usd = 0.5\n",
		"big-reader":  "[role]\ninherits = \"reader\"\n[limits]\nmax_context_tokens = 10000000\n",
		"mcp-user":    "[tools]\nallowed = [\"mcp__*\"]\n[limits]\nmax_context_tokens = 1000\nmax_shell_invocations = 0\nmax_cost_usd = 0.5\n",
		"coder-no-gh": "[role]\ninherits = \"coder\"\n[tools]\ndenied = [\"mcp__github__*\"]\n",
		"never-block": "[role]\ninherits = \"reviewer\"\n[limits]\nblock_at_percent = 255\n",
		// A limit of 0 context tokens or $0 is never exhausted: no bound.
		"no-tokens": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 0\n",
		"no-cost":   "[role]\ninherits = \"reviewer\"\n[limits]\nmax_cost_usd = 0.0\n",
	})
	doc := Compile(set, DefaultConfig())
	for _, tt := range []struct {
		ceiling string
		want    []string
	}{
		// big-reader's tokens and never-block's block percentage are above admin's.
		{"admin", []string{"admin", "coder", "coder-no-gh", "debugger", "mcp-user", "ops", "reader", "reviewer"}},
		{"coder", []string{"coder", "coder-no-gh", "mcp-user", "reader", "reviewer"}},
		// reader and reviewer never allow mcp__github__*; the others do.
		{"coder-no-gh", []string{"coder-no-gh", "reader", "reviewer"}},
		{"reviewer", []string{"reader", "reviewer"}},
		{"reader", []string{"reader"}},
		{"ops", []string{"ops"}}, // reader's shell policy, track, is looser than compress
		// Unbounded in one dimension, they cover the roles like them in
		// the rest (big-reader is bounded in both).
		{"no-tokens", []string{"big-reader", "no-tokens", "reader", "reviewer"}},
		{"no-cost", []string{"no-cost", "reader", "reviewer"}},
	} {
		got := slices.Sorted(maps.Keys(doc.Roles[tt.ceiling].Covers))
		if !slices.Equal(got, tt.want) {
			t.Errorf("within %s: %v, want %v", tt.ceiling, got, tt.want)
		}
	}
}

// The default ceiling is unbounded in a dimension where a built-in within
// it is (a user's coder with max_context_tokens = 0), so that the built-in
// stays within it; a project's role unbounded there is not, where no
// built-in is.
func TestDefaultCeilingOfUnboundedLimits(t *testing.T) {
	project := map[string]string{"free": "[role]\ninherits = \"reviewer\"\n[limits]\nmax_context_tokens = 0\n"}
	doc := Compile(testroles.Set(t, project), DefaultConfig())
	if c := doc.Ceiling; c.Limits.Tokens != 200000 || c.Covers["free"] || !c.Covers["coder"] {
		t.Errorf("the default ceiling: %+v covers %v", c.Limits, c.Covers)
	}
	user := testroles.UserSet(t, map[string]string{"coder": "[role]\ninherits = \"coder\"\n[limits]\nmax_context_tokens = 0\n"})
	doc = Compile(user, DefaultConfig())
	if c := doc.Ceiling; c.Limits.Tokens != 0 || !c.Covers["coder"] || !c.Covers["debugger"] || !c.Covers["reviewer"] {
		t.Errorf("the default ceiling over a user's unbounded coder: %+v covers %v", c.Limits, c.Covers)
	}
}

// toolsWithin never claims more than is true: over roles built from small
// patterns, whenever it holds, every name the role may call the ceiling may
// call too.
func TestToolsWithinIsSound(t *testing.T) {
	pool := []string{"*", "a*", "*a", "ab", "a*b", "*b*", "b_*", "_a", "ba", "a", "*_*"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		for _, c := range []string{"a", "b", "_"} {
			if n > 0 {
				grow(prefix+c, n-1)
			}
		}
	}
	grow("", 3)
	// Lists of up to two patterns from the pool.
	var lists [][]string
	lists = append(lists, nil)
	for i, p := range pool {
		lists = append(lists, []string{p})
		for _, q := range pool[i+1:] {
			lists = append(lists, []string{p, q})
		}
	}
	may := func(allowed, denied Matcher, n string) bool { return allowed.Match(n) && !denied.Match(n) }
	claims, keep := 0, race.Sample(soundStride)
	for _, ra := range lists {
		for _, rd := range lists {
			for _, ca := range lists {
				for _, cd := range lists[:12] {
					if !keep() || !toolsWithin(ra, rd, ca, cd) {
						continue
					}
					claims++
					rA, rD, cA, cD := NewMatcher(ra), NewMatcher(rd), NewMatcher(ca), NewMatcher(cd)
					for _, n := range names {
						if may(rA, rD, n) && !may(cA, cD, n) {
							t.Fatalf("within: allowed %q denied %q under allowed %q denied %q, but only the first may call %q", ra, rd, ca, cd, n)
						}
					}
				}
			}
		}
	}
	t.Logf("%d inclusions checked", claims)
}

// A role is within a ceiling that asks for a tool only if it asks for it
// too, or denies it, or never allows it: an agent under a ceiling that
// asks for ctx_shell may not switch into a role that runs it unasked.
func TestWithinAsks(t *testing.T) {
	set := testroles.Set(t, map[string]string{
		"careful":        "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\", \"mcp__*\"]\n",
		"more-careful":   "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_*\", \"mcp__*\"]\n",
		"careful-no-mcp": "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\ndenied = [\"mcp__*\"]\n",
		"half-careful":   "[role]\ninherits = \"coder\"\n[tools]\nask = [\"ctx_shell\"]\n",
	})
	doc := Compile(set, DefaultConfig())
	got := slices.Sorted(maps.Keys(doc.Roles["careful"].Covers))
	// reviewer denies ctx_shell and never allows mcp__*; half-careful runs mcp__* unasked.
	want := []string{"careful", "careful-no-mcp", "more-careful", "reviewer"}
	if !slices.Equal(got, want) {
		t.Errorf("within careful: %v, want %v", got, want)
	}
	if !doc.Roles["coder"].Covers["careful"] {
		t.Error("careful, which only asks more, is not within coder")
	}
}

// asksWithin never claims more than is true: whenever it holds, every name
// the role may call unasked the ceiling does not ask for.
func TestAsksWithinIsSound(t *testing.T) {
	pool := []string{"*", "a*", "*a", "ab", "a*b", "*b*", "_a", "a"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		for _, c := range []string{"a", "b", "_"} {
			if n > 0 {
				grow(prefix+c, n-1)
			}
		}
	}
	grow("", 3)
	lists := [][]string{nil}
	for i, p := range pool {
		lists = append(lists, []string{p})
		for _, q := range pool[i+1:] {
			lists = append(lists, []string{p, q})
		}
	}
	claims, keep := 0, race.Sample(soundStride)
	for _, ra := range lists[:10] {
		for _, rd := range lists[:10] {
			for _, rk := range lists {
				for _, ck := range lists {
					if !keep() || !asksWithin(ra, rd, rk, ck) {
						continue
					}
					claims++
					rA, rD, rK, cK := NewMatcher(ra), NewMatcher(rd), NewMatcher(rk), NewMatcher(ck)
					for _, n := range names {
						if rA.Match(n) && !rD.Match(n) && !rK.Match(n) && cK.Match(n) {
							t.Fatalf("asks within: allowed %q denied %q ask %q under ask %q, but %q runs unasked", ra, rd, rk, ck, n)
						}
					}
				}
			}
		}
	}
	if claims < 1000/race.Stride(soundStride) {
		t.Errorf("only %d inclusions checked", claims)
	}
}

// A role whose denied and ask patterns hold a NUL where its ceiling's have
// a '*' is not within the ceiling: it allows, unasked, what the ceiling
// denies and asks for.
func TestNULCoversNoStar(t *testing.T) {
	set := testroles.Set(t, map[string]string{
		"careful": "[tools]\nallowed = [\"*\"]\ndenied = [\"mcp__prod__*\"]\nask = [\"mcp__deploy__*\"]\n",
		"honest":  "[tools]\nallowed = [\"*\"]\n",
	})
	doc := Compile(set, DefaultConfig())
	sneaky := doc.Roles["careful"]
	sneaky.Denied = NewMatcher([]string{"mcp__prod__\x00*"})
	if Within(sneaky, doc.Roles["careful"]) {
		t.Error("a role denying mcp__prod__<NUL>* is within one denying mcp__prod__*")
	}
	sneaky = doc.Roles["careful"]
	sneaky.Ask = NewMatcher([]string{"mcp__deploy__\x00*"})
	if Within(sneaky, doc.Roles["careful"]) {
		t.Error("a role asking for mcp__deploy__<NUL>* is within one asking for mcp__deploy__*")
	}
	if !Within(doc.Roles["careful"], doc.Roles["careful"]) || Within(doc.Roles["honest"], doc.Roles["careful"]) {
		t.Error("Within is wrong about the roles themselves")
	}
}
