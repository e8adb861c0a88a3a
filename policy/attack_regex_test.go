package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// A regular expression of 100 bytes may have a program of 30,000
// instructions ((?:\pL x 30){1000}), and Go's regexp matches in steps of
// an instruction and a byte: one call of regex.match on an argument of
// 200 KB, which the agent writes, is 6*10^9 steps, some 15 s, inside one
// call of the built-in, where no deadline is looked at (an argument of a
// few MB: minutes). A project's policy, which the agent writes too, makes
// every call it decides spin a core so long, in the gateway or the hook
// daemon that decides every project's calls. Each must be a deny within
// the deadline.
func TestAttackRegexProgram(t *testing.T) {
	t.Parallel()
	const pattern = "`(?:" + `\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL\pL` + "){1000}`"
	for name, call := range map[string]string{
		"regex.match":                      "regex.match(" + pattern + ", input.arguments.content)",
		"regex.find_n":                     "count(regex.find_n(" + pattern + ", input.arguments.content, -1)) > 0",
		"regex.find_all_string_submatch_n": "count(regex.find_all_string_submatch_n(" + pattern + ", input.arguments.content, -1)) > 0",
		"regex.split":                      "count(regex.split(" + pattern + ", input.arguments.content)) > 1",
		"regex.replace":                    "regex.replace(input.arguments.content, " + pattern + ", \"\") == \"\"",
		// The harness's own function, whose calls of regex.match match its
		// self-protection's expressions against every string.
		"data.harness.matches": "data.harness.matches({\"regex\": " + pattern + "}, input.arguments.content)",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := "package harness.custom.re\n\ndeny contains \"matched\" if " + call + "\n"
			e, err := customEngine(t, compiler.Module{Name: "policies/project/re.rego", Source: []byte(src)})
			if err != nil {
				return // the policy refused: it decides nothing
			}
			e.SetBounds(Bounds{Timeout: 200 * time.Millisecond})
			e.SetCaching(false)
			in := contract.Input{Role: "coder", Tool: "ctx_read", Arguments: map[string]any{"path": "a", "content": strings.Repeat("é", 100000)}}
			denyWithin(t, 10*time.Second, func() contract.Decision {
				// By topdown, then by the plan.
				d, _ := e.Decide(context.Background(), in)
				if p, err := e.cur.Load().waitPlan(Query); d.Decision == contract.Deny && err == nil && p != nil {
					d, _ = e.Decide(context.Background(), in)
				}
				return d
			})
		})
	}
}
