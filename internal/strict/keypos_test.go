package strict

import "testing"

func TestKeyPositions(t *testing.T) {
	t.Parallel()
	src := `# top
[role]
  description = """
a = 1
"""
"shell_policy" = "deny"   # quoted key

[tools]
allowed = [
  "x = y",
]
denied = { a = 1 }
[limits.extra]
max = 1
`
	p := KeyPositions(src)
	for key, want := range map[string]Pos{
		"role":                    {2, 1},
		"role.description":        {3, 3},
		"role.shell_policy":       {6, 1},
		"tools.allowed":           {9, 1},
		"tools.denied":            {12, 1},
		"limits.extra.max":        {14, 1},
		"tools.denied.a":          {12, 1}, // inside an inline table: the enclosing key
		"role.a":                  {2, 1},  // not a key (inside a string): the table
		"limits.extra.max.deeper": {14, 1},
	} {
		if got := p.Of(key); got != want {
			t.Errorf("%s at %v, want %v", key, got, want)
		}
	}
	if _, ok := p["role.a"]; ok {
		t.Error("a line inside a multi-line string was taken for a key")
	}
}

// The tables of an array of tables are at their number, from 1, and so
// are their keys; a later [table] ends the numbering.
func TestKeyPositionsArrayOfTables(t *testing.T) {
	t.Parallel()
	src := `[[alerts]]
url = "a"

[[alerts]]
  name = "b"
url = "b"
[metrics]
token = "x"
[[upstream]]
name = "u"
`
	p := KeyPositions(src)
	for key, want := range map[string]Pos{
		"alerts":           {1, 1},
		"alerts.1":         {1, 1},
		"alerts.1.url":     {2, 1},
		"alerts.2":         {4, 1},
		"alerts.2.name":    {5, 3},
		"alerts.2.url":     {6, 1},
		"alerts.url":       {2, 1}, // unnumbered: the first
		"alerts.3":         {1, 1}, // no third: the array
		"metrics.token":    {8, 1},
		"upstream.1.name":  {10, 1},
		"alerts.2.headers": {4, 1}, // absent key: its table
		"metrics.1.token":  {7, 1}, // [metrics] is not an array: its table
	} {
		if got := p.Of(key); got != want {
			t.Errorf("%s at %v, want %v", key, got, want)
		}
	}
}
