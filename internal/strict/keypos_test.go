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
