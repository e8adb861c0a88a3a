package strict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in a role file. It reads like a compiler error:
//
//	.lean-ctx/roles/auditor.toml:7:1: unknown key "max_shell" in [limits] (did you mean "max_shell_invocations"?)
type Error struct {
	File string `json:"file"`           // path of the file, as found
	Line int    `json:"line,omitempty"` // 1-based; 0 when the problem concerns the whole file
	Col  int    `json:"col,omitempty"`  // 1-based; 0 when unknown
	Key  string `json:"key,omitempty"`  // dotted key the problem is about ("limits.max_cost_usd"); may be empty
	Msg  string `json:"message"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem of one load, sorted by file, line and column.
type ErrorList []*Error

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("%d errors:\n%s", len(l), strings.Join(lines, "\n"))
}

// Sort orders the list by file, line, column and message, and drops exact duplicates.
func (l ErrorList) Sort() ErrorList {
	slices.SortFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// Err returns the sorted list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l.Sort()
}

// Suggest returns the candidate closest to s when it is close enough to be a
// likely typo, or "".
func Suggest(s string, candidates []string) string {
	best, bestDist := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestDist || (strings.HasPrefix(c, s) && len(s) >= 4) {
			best, bestDist = c, min(d, bestDist)
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
