package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/internal/testroles"
)

const noForcePush = `package harness.custom.no_force_push

deny contains msg if {
	input.tool in {"ctx_shell", "ctx_execute"}
	regex.match(` + "`" + `git\s+push\s+.*(--force|-f\b)` + "`" + `, input.arguments.command)
	msg := sprintf("force pushes are not allowed (%s)", [input.arguments.command])
}
`

const warnBigReads = `package harness.custom.big_reads

warn contains "reading more than 2000 lines at once" if {
	input.tool == "ctx_read"
	input.arguments.lines > 2000
}

# Custom policies see the compiled roles and the shell policy.
warn contains msg if {
	input.tool == "ctx_session"
	data.harness.roles[input.role].shell_policy == input.shell_policy
	msg := "session tool used"
}
`

func customEngine(t *testing.T, mods ...compiler.Module) (*Engine, error) {
	t.Helper()
	e, err := New(context.Background(), compiler.Compile(testSet(t), compiler.DefaultConfig()), mods...)
	if err != nil {
		return nil, err
	}
	return relaxed(e), nil
}

func TestCustomPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := customEngine(t,
		compiler.Module{Name: "policies/project/no_force_push.rego", File: ".lean-ctx/policies/no_force_push.rego", Source: []byte(noForcePush)},
		compiler.Module{Name: "policies/user/big_reads.rego", Source: []byte(warnBigReads)},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		in     contract.Input
		want   string
		reason contract.Reason // the first reason (deny) or warning (warn)
	}{
		{"force push denied", contract.Input{Role: "coder", Tool: "ctx_shell", Arguments: map[string]any{"command": "git push --force origin main"}}, contract.Deny,
			contract.Reason{Code: "policy", Message: "force pushes are not allowed (git push --force origin main)", Policy: "harness.custom.no_force_push"}},
		{"plain push allowed", contract.Input{Role: "coder", Tool: "ctx_shell", Arguments: map[string]any{"command": "git push origin main"}}, contract.Allow, contract.Reason{}},
		{"big read warns", contract.Input{Role: "reviewer", Tool: "ctx_read", Arguments: map[string]any{"lines": 5000}}, contract.Warn,
			contract.Reason{Code: "policy", Message: "reading more than 2000 lines at once", Policy: "harness.custom.big_reads"}},
		{"custom policies apply to exempt tools", contract.Input{Role: "coder", Tool: "ctx_session"}, contract.Warn,
			contract.Reason{Code: "policy", Message: "session tool used", Policy: "harness.custom.big_reads"}},
		{"harness and custom reasons together", contract.Input{Role: "reviewer", Tool: "ctx_shell", Arguments: map[string]any{"command": "git push -f"}}, contract.Deny,
			contract.Reason{Code: "policy", Message: "force pushes are not allowed (git push -f)", Policy: "harness.custom.no_force_push"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := e.Decide(ctx, tt.in)
			if err != nil || d.Decision != tt.want {
				t.Fatalf("%+v, %v; want %s", d, err, tt.want)
			}
			list := d.Warnings
			if d.Decision == contract.Deny {
				list = d.Reasons
			}
			if tt.reason.Code != "" && (len(list) == 0 || list[0] != tt.reason) {
				t.Errorf("reasons %+v, want first %+v", list, tt.reason)
			}
		})
	}
	if d, _ := e.Decide(ctx, contract.Input{Role: "reviewer", Tool: "ctx_shell", Arguments: map[string]any{"command": "git push -f"}}); len(d.Reasons) != 2 || d.Reasons[1].Code != contract.CodeToolDenied {
		t.Errorf("the harness's reason is kept beside the policy's: %+v", d.Reasons)
	}
}

func TestCustomPolicyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, src string
		want            string
	}{
		{"outside harness.custom", "p.rego", "package harness\n\ndecision := {}\n",
			"p.rego:1:1: package harness: a custom policy must be package harness.custom.<name>"},
		{"nested package", "p.rego", "package harness.custom.a.b\n", "p.rego:1:1: package harness.custom.a.b: a custom policy must be"},
		{"syntax", "bad.rego", "package harness.custom.bad\n\ndeny contains msg if {\n", "bad.rego:4: rego_parse_error: unexpected eof token"},
		{"strict: unused variable", "u.rego", "package harness.custom.u\n\ndeny contains \"x\" if {\n\tsome y\n\tinput.tool == \"a\"\n}\n",
			"u.rego:4:"},
		{"network is forbidden", "net.rego", "package harness.custom.net\n\ndeny contains \"x\" if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n",
			"net.rego:4:"},
		{"environment is forbidden", "env.rego", "package harness.custom.env\n\ndeny contains \"x\" if {\n\topa.runtime().env.HOME\n}\n",
			"env.rego:4:"},
		{"name lookups are forbidden", "dns.rego", "package harness.custom.dns\n\ndeny contains \"x\" if {\n\tnet.lookup_ip_addr(input.arguments.host)\n}\n",
			"dns.rego:4:"},
		{"signing requests is forbidden", "aws.rego", "package harness.custom.aws\n\ndeny contains \"x\" if {\n\tproviders.aws.sign_req({}, {}, 0)\n}\n",
			"aws.rego:4:"},
		{"test outside harness", "x_test.rego", "package tests\n\ntest_x if true\n", "x_test.rego:1:1: package tests: a test must be in a package harness.custom.<name>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mod := compiler.Module{Name: "policies/project/" + tt.file, File: tt.file, Source: []byte(tt.src)}
			_, err := customEngine(t, mod)
			var list strict.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an error list, got %v", err)
			}
			if !strings.HasPrefix(list[0].Error(), tt.want) {
				t.Errorf("error:\n got %v\nwant %s…", err, tt.want)
			}
			// Check finds the same without any data.
			if err := Check([]compiler.Module{mod}); err == nil || err.Error() != list.Error() {
				t.Errorf("Check: %v\nNew: %v", err, list)
			}
		})
	}
}

func TestMalformedCustomRulesDeny(t *testing.T) {
	t.Parallel()
	e, err := customEngine(t, compiler.Module{Name: "m.rego", Source: []byte("package harness.custom.m\n\ndeny := \"not a set\"\n")})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := e.Decide(context.Background(), contract.Input{Role: "coder", Tool: "ctx_read"})
	if d.Decision != contract.Deny || d.Reasons[0].Policy != "harness.custom.m" || !strings.Contains(d.Reasons[0].Message, "deny must be a set") {
		t.Errorf("%+v", d)
	}
}

func TestReloadKeepsLastGoodCustomPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := compiler.Module{Name: "p.rego", Source: []byte(noForcePush)}
	e, err := customEngine(t, good)
	if err != nil {
		t.Fatal(err)
	}
	doc := e.Document()
	broken := compiler.Module{Name: "p.rego", File: "p.rego", Source: []byte("package harness.custom.no_force_push\n\ndeny contains if\n")}
	var list strict.ErrorList
	if err := e.Reload(ctx, doc, broken); !errors.As(err, &list) || !strings.HasPrefix(list[0].Error(), "p.rego:3:15: rego_parse_error: unexpected if keyword") {
		t.Fatalf("broken reload: %v", err)
	}
	in := contract.Input{Role: "coder", Tool: "ctx_shell", Arguments: map[string]any{"command": "git push --force"}}
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Deny {
		t.Errorf("the last good policy is gone: %+v", d)
	}
	if err := e.Reload(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Decide(ctx, in); d.Decision != contract.Allow {
		t.Errorf("after removing the policy: %+v", d)
	}
}

func TestSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	onlyCoder := compiler.Module{Name: "only_coder.rego", Source: []byte(`package harness.custom.only_coder

switch_deny contains msg if {
	input.by == "agent"
	input.from == "reviewer"
	input.to != "coder"
	msg := sprintf("reviewer may only switch to coder, not %s", [input.to])
}
`)}
	// A role that allows everything within the built-ins' limits, and one
	// with one deny of nothing and a million shell calls: a way up.
	set := testroles.Set(t, map[string]string{
		"anything": "[tools]\nallowed = [\"*\"]\n",
		"wide":     "[tools]\nallowed = [\"*\"]\ndenied = [\"zz_nonexistent_tool\"]\n[limits]\nmax_shell_invocations = 1000000\nblock_at_percent = 255\n",
	})
	e, err := New(ctx, compiler.Compile(set, compiler.DefaultConfig()), onlyCoder)
	if err != nil {
		t.Fatal(err)
	}
	relaxed(e)
	tests := []struct {
		from, to, by string
		rule         string // "" when allowed
	}{
		{"coder", "reviewer", contract.ByAgent, ""},
		{"reviewer", "coder", contract.ByAgent, ""},
		{"coder", "debugger", contract.ByAgent, ""},
		{"coder", "admin", contract.ByAgent, "privileged"},
		{"coder", "ops", contract.ByAgent, "privileged"},
		{"coder", "anything", contract.ByAgent, ""},
		{"coder", "wide", contract.ByAgent, "ceiling"},
		{"coder", "wide", contract.ByOperator, ""},
		{"coder", "admin", contract.ByOperator, ""},
		{"coder", "anything", contract.ByOperator, ""},
		{"reviewer", "debugger", contract.ByAgent, "harness.custom.only_coder"},
		{"reviewer", "debugger", contract.ByOperator, ""},
		{"coder", "nobody", contract.ByOperator, "unknown_role"},
	}
	for _, tt := range tests {
		s, err := e.Switch(ctx, contract.SwitchInput{From: tt.from, To: tt.to, By: tt.by, Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		rule := ""
		if len(s.Reasons) > 0 {
			rule = s.Reasons[0].Rule
		}
		if s.Allowed != (tt.rule == "") || rule != tt.rule || (!s.Allowed && s.Reasons[0].Code != contract.CodeSwitchDenied) {
			t.Errorf("%s → %s by %s: %+v; want rule %q", tt.from, tt.to, tt.by, s, tt.rule)
		}
	}
}

func TestCheckAcceptsGoodPolicies(t *testing.T) {
	t.Parallel()
	if err := Check([]compiler.Module{{Name: "p.rego", Source: []byte(noForcePush)}, {Name: "b.rego", Source: []byte(warnBigReads)}}); err != nil {
		t.Error(err)
	}
}

// No error of a policy file quotes more of it than the offending token,
// and that cut short: OPA's messages can print whole terms of the file.
func TestCustomPolicyErrorsQuoteLittle(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	q := `"` + secret + `"`
	ident := strings.Repeat(strings.ReplaceAll(secret, "/", ""), 3)
	for _, tt := range []struct{ name, src string }{
		{"an undefined reference", "package harness.custom.x\n\ndeny contains msg if { msg := {" + q + ": 1}[\"a\"].b.c }\n"},
		{"a string as a package", "package harness.custom[" + q + "]\n"},
		{"an unterminated raw string", "package harness.custom.x\n\ndeny contains msg if { msg := `" + secret + "\n"},
		{"a syntax error", "package harness.custom.x\n\ndeny contains " + q + " if {\n"},
		{"a long identifier", "package harness.custom.x\n\ndeny contains msg if { msg := " + ident + " }\n"},
	} {
		mod := compiler.Module{Name: "policies/project/x.rego", File: "x.rego", Source: []byte(tt.src)}
		_, err := customEngine(t, mod)
		cerr := Check([]compiler.Module{mod})
		for _, e := range []error{err, cerr} {
			if e == nil || strings.Contains(e.Error(), secret) || strings.Contains(e.Error(), ident[:2*strict.MaxQuote+1]) {
				t.Errorf("%s: %v", tt.name, e)
			}
		}
	}
}
