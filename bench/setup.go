// Command bench compares the harness's decision with cedar-go deciding an
// equivalent role/tool/budget policy, in one run: `make bench-compare`
// prints, for each kind of call, both figures and the ratio harness/cedar-go,
// for the harness's evaluation (uncached) and its decision cache (cached).
//
// This is a module of its own, so that cedar-go is no dependency of the
// harness: it replaces the harness's module with the directory above.
package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/policy"
	"github.com/agentharness/harness/roles"
)

// customRoles are 50 roles with a mix of exact names and patterns, as a
// real installation might have (the same as the policy package's
// BenchmarkDecide).
func customRoles() map[string]string {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("custom-%02d", i)] = fmt.Sprintf(`[role]
inherits = %q
[tools]
allowed = ["ctx_read", "ctx_search", "ctx_tree", "tool_%d_*", "mcp__server%d__*", "*_view"]
denied = ["ctx_edit", "danger_%d"]
[limits]
max_context_tokens = %d
`, []string{"coder", "reviewer", "debugger"}[i%3], i, i, i, 100000+i)
	}
	return files
}

// customPolicy is one custom policy, as BenchmarkDecide's: it refuses a
// force push in a shell command.
const customPolicy = `package harness.custom.bench

deny contains "no force pushes" if {
	data.harness.config.shell_tools[input.tool]
	regex.match(` + "`" + `\bgit\s+push\s+.*--force\b` + "`" + `, input.arguments.command)
}
`

// document compiles the built-ins and the custom roles.
func document() (*compiler.Document, error) {
	files := customRoles()
	var defs []*roles.Def
	for _, name := range slices.Sorted(maps.Keys(files)) {
		d, errs := roles.Parse(name+".toml", []byte(files[name]), roles.SourceProject)
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: %v", name, errs)
		}
		defs = append(defs, d)
	}
	set, err := roles.LoadDefs(defs...)
	if err != nil {
		return nil, err
	}
	return compiler.Compile(set, compiler.DefaultConfig()), nil
}

// harness is the harness's engine on doc, with the custom policy.
func harness(doc *compiler.Document) (*policy.Engine, error) {
	return policy.New(context.Background(), doc, compiler.Module{Name: "bench.rego", Source: []byte(customPolicy)})
}

// cedarPolicies writes the roles of doc as Cedar policies: a call is
// permitted by a pattern of its role's allowed list, or as an exempt tool
// (of the harness's own, not an upstream's); it is forbidden by a pattern
// of its role's denied list (by either of its names), by a budget
// dimension at its exhaustion threshold, a shell tool under shell policy
// deny or past the shell calls admitted, and by the custom policy's force
// push. What Cedar cannot say the harness also does is left out: warnings
// and their figures, asking a person, the self-protection rules on
// arguments, and the reasons' messages (Cedar gives the policies' ids).
// With roles, only the policies of those roles are written (and those of
// every role): a policy set per role, which Go picks by the call's role, as
// a deployment that indexes Cedar's policies would.
func cedarPolicies(doc *compiler.Document, roles ...string) string {
	var b strings.Builder
	exempt := cedarSet(doc.Config.ExemptTools)
	shell := cedarSet(doc.Config.ShellTools)
	notExempt := fmt.Sprintf(`unless { context.upstream == "" && %s.contains(context.tool) }`, exempt)
	isShell := fmt.Sprintf(`(%s.contains(context.tool) || %s.contains(context.upstream_tool))`, shell, shell)
	fmt.Fprintf(&b, "@id(\"exempt\")\npermit (principal, action == Action::\"call\", resource)\nwhen { context.upstream == \"\" && %s.contains(context.tool) };\n\n", exempt)
	fmt.Fprintf(&b, "@id(\"custom-force-push\")\nforbid (principal, action == Action::\"call\", resource)\nwhen { %s.contains(context.tool) && context has command && context.command like \"*git push *--force*\" };\n\n", shell)
	for _, name := range slices.Sorted(maps.Keys(doc.Roles)) {
		if len(roles) > 0 && !slices.Contains(roles, name) {
			continue
		}
		r := doc.Roles[name]
		who := fmt.Sprintf("principal == Role::%q, action == Action::\"call\", resource", name)
		if m := likeAny("context.tool", r.Allowed.Patterns); m != "" {
			fmt.Fprintf(&b, "@id(%q)\npermit (%s)\nwhen { %s };\n\n", name+"-allowed", who, m)
		}
		if m := likeAny("context.tool", r.Denied.Patterns); m != "" {
			fmt.Fprintf(&b, "@id(%q)\nforbid (%s)\nwhen { %s || (context.upstream_tool != \"\" && %s) }\n%s;\n\n",
				name+"-denied", who, m, likeAny("context.upstream_tool", r.Denied.Patterns), notExempt)
		}
		var over []string
		for _, d := range []struct{ dim, field string }{{"tokens", "tokens"}, {"shell", "shell"}, {"cost", "cost_micros"}} {
			if at := r.Thresholds[d.dim].ExhaustedAt; at != nil {
				over = append(over, fmt.Sprintf("context.%s >= %d", d.field, *at))
			}
		}
		if admits := r.Thresholds["shell"].Admits; admits != nil {
			over = append(over, fmt.Sprintf("(%s && context.shell + 1 > %d)", isShell, *admits))
		}
		if r.ShellPolicy == "deny" {
			over = append(over, isShell)
		}
		if len(over) > 0 {
			fmt.Fprintf(&b, "@id(%q)\nforbid (%s)\nwhen { %s }\n%s;\n\n", name+"-budget", who, strings.Join(over, " || "), notExempt)
		}
	}
	return b.String()
}

// likeAny is a Cedar condition that what matches one of patterns: a
// harness pattern's '*' is any run of characters, and so is Cedar's, every
// other character is itself in both (a pattern without '*' is compared as
// a string, which Cedar does faster).
func likeAny(what string, patterns []string) string {
	var alts []string
	for _, p := range patterns {
		if strings.Contains(p, "*") {
			alts = append(alts, fmt.Sprintf("%s like %q", what, p))
		} else {
			alts = append(alts, fmt.Sprintf("%s == %q", what, p))
		}
	}
	if len(alts) == 0 {
		return ""
	}
	return "(" + strings.Join(alts, " || ") + ")"
}

// cedarSet is a Cedar set literal of the names of m.
func cedarSet(m map[string]bool) string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		names = append(names, fmt.Sprintf("%q", n))
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// cedarRequest is the call of in as a Cedar request: the role is the
// principal, the tool, its origin, the usage and the command are the
// context.
func cedarRequest(in contract.Input) cedar.Request {
	ctx := cedar.RecordMap{
		"tool":          cedar.String(in.Tool),
		"upstream":      cedar.String(in.Upstream),
		"upstream_tool": cedar.String(in.UpstreamTool),
		"tokens":        cedar.Long(in.Budget.Tokens),
		"shell":         cedar.Long(in.Budget.Shell),
		"cost_micros":   cedar.Long(in.Budget.CostMicros),
	}
	if args, ok := in.Arguments.(map[string]any); ok {
		if cmd, ok := args["command"].(string); ok {
			ctx["command"] = cedar.String(cmd)
		}
	}
	return cedar.Request{
		Principal: cedar.NewEntityUID("Role", cedar.String(in.Role)),
		Action:    cedar.NewEntityUID("Action", "call"),
		Resource:  cedar.NewEntityUID("Tool", cedar.String(in.Tool)),
		Context:   cedar.NewRecord(ctx),
	}
}
