// Package explain says in words why a decision came out as it did: which
// role and files were involved, which patterns matched the tool, and the
// budget arithmetic. It renders the policy's explanation (what kind of tool,
// which patterns match, the thresholds) and the role's provenance; it
// decides and matches nothing itself.
package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// Write writes the policy's explanation x of a decision, for the resolved
// role r (nil when the role is unknown).
func Write(w io.Writer, x policy.Explanation, r *roles.Role) {
	// Each line is shown Printable: a role's patterns, chain and the
	// files and directories of its origins are a repository's to write,
	// and none of them may drive the terminal or forge a line.
	p := func(format string, args ...any) { fmt.Fprintln(w, contract.Printable(fmt.Sprintf(format, args...))) }
	p("explain:")
	d := x.Decision
	if r == nil || slices.ContainsFunc(d.Reasons, func(r contract.Reason) bool { return r.Code == contract.CodeUnknownRole }) {
		p("  role %q is not defined: every call is denied (unknown_role)", d.Role)
		return
	}
	p("  role %s (%s, %s); chain %s", r.Name, r.Source, contract.Printable(r.File), strings.Join(r.Chain, " → "))
	origin := func(key string) string {
		if o := r.Origin[key]; o != "" {
			return o
		}
		return "default"
	}

	exempt, shell := x.Exempt, x.ShellTool
	kind := "a tool"
	switch {
	case exempt:
		kind = "an exempt tool: tool lists and budgets do not apply to it (rule 1)"
	case shell:
		kind = "a shell tool: shell_policy and the shell budget apply (rules 3, 7)"
	}
	p("  tool %s: %s", contract.Printable(d.Tool), kind) // the agent's to name
	if !exempt {
		denied := len(x.DeniedBy) > 0
		if denied {
			p("    denied: pattern %q of tools.denied (%s) matches → tool_denied (rule 2: denied beats allowed)", x.DeniedBy[0], origin("tools.denied"))
		} else {
			p("    denied: no pattern of tools.denied matches (%s)", patterns(r.Denied))
		}
		switch {
		case len(x.AllowedBy) > 0:
			p("    allowed: pattern %q of tools.allowed (%s) matches", x.AllowedBy[0], origin("tools.allowed"))
		case denied:
			p("    allowed: no pattern of tools.allowed matches either (%s)", patterns(r.Allowed))
		default:
			p("    allowed: no pattern of tools.allowed matches (%s) → tool_not_allowed", patterns(r.Allowed))
		}
		if len(x.AskedBy) > 0 {
			p("    ask: pattern %q of tools.ask (%s) matches → approval_required, unless something refuses the call (deny beats ask)", x.AskedBy[0], origin("tools.ask"))
		} else if len(r.Ask) > 0 {
			p("    ask: no pattern of tools.ask matches (%s)", patterns(r.Ask))
		}
	}
	p("  shell_policy %s (%s)", d.ShellPolicy, origin("role.shell_policy"))

	l := x.Limits
	block := "blocking at " + fmt.Sprint(l.BlockPercent) + "%"
	if l.BlockPercent > 100 {
		block = "blocking off (block_at_percent 255)"
	}
	p("  budget: warning at %d%% (%s), %s (%s)", l.WarnPercent, origin("limits.warn_at_percent"), block, origin("limits.block_at_percent"))
	for _, dim := range []struct {
		name, key string
		d         contract.Dimension
		format    func(int64) string
	}{
		{"tokens", "limits.max_context_tokens", d.Budget.Tokens, plain},
		{"shell", "limits.max_shell_invocations", d.Budget.Shell, plain},
		{"cost", "limits.max_cost_usd", d.Budget.Cost, contract.FormatUSD},
	} {
		t := x.Thresholds[dim.name]
		line := fmt.Sprintf("    %-6s %s of %s (%s)", dim.name, dim.format(dim.d.Used), dim.format(dim.d.Limit), origin(dim.key))
		if dim.d.Limit > 0 {
			line += fmt.Sprintf(": floor(%d*100/%d) = %d%%; WARNING from %s", dim.d.Used, dim.d.Limit, dim.d.Percent, dim.format(t.WarnAt))
			if t.ExhaustedAt != nil {
				line += ", EXHAUSTED from " + dim.format(*t.ExhaustedAt)
			}
		} else {
			line += ": a limit of 0 is WARNING from the first use and never EXHAUSTED"
		}
		p("%s → %s", line, dim.d.Level)
	}
	if t := x.Thresholds["shell"]; shell && !exempt {
		if t.Admits != nil {
			p("    shell admission: this would be call %d of the %d admitted (floor(%d*%d/100)) (rule 7)", d.Budget.Shell.Used+1, *t.Admits, l.Shell, l.BlockPercent)
		} else {
			p("    shell admission: blocking is off, every shell call is admitted")
		}
	}
	var codes []string
	for _, r := range d.Reasons {
		codes = append(codes, r.Code)
	}
	for _, r := range d.Warnings {
		codes = append(codes, r.Code)
	}
	if len(codes) == 0 {
		codes = []string{"no reasons, no warnings"}
	}
	p("  → %s (%s); signal %s", d.Decision, strings.Join(codes, ", "), d.Signal)
}

func plain(n int64) string { return fmt.Sprint(n) }

// patterns is a role's list as the policy holds it: sorted, each once.
func patterns(list []string) string {
	sorted := slices.Compact(slices.Sorted(slices.Values(list)))
	if len(sorted) == 0 {
		return "the list is empty"
	}
	return "list: " + strings.Join(sorted, ", ")
}
