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

// The tables of an array of tables are numbered from 1 ("upstream[2].name")
// beside the first one's plain keys, and a key no line defines is found at
// the first key below it.
func TestKeyPositionsOfArraysAndSubtables(t *testing.T) {
	t.Parallel()
	src := `[[upstream]]
name = "a"

[[upstream]]
name = "b"
url = "http://b"

[cost.models.x]
input_usd_per_mtok = 1
`
	p := KeyPositions(src)
	for key, want := range map[string]Pos{
		"upstream":          {1, 1},
		"upstream.name":     {2, 1},
		"upstream[1]":       {1, 1},
		"upstream[1].name":  {2, 1},
		"upstream[2]":       {4, 1},
		"upstream[2].name":  {5, 1},
		"upstream[2].url":   {6, 1},
		"upstream[2].other": {4, 1},
		"cost.models":       {8, 1}, // defined by no line: its first table
		"cost":              {8, 1},
		"nothing":           {},
	} {
		if got := p.Of(key); got != want {
			t.Errorf("%s at %v, want %v", key, got, want)
		}
	}
}
