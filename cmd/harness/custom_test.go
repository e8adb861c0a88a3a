package main

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	withPolicies = "../../testdata/projects/policies"
	brokenPolicy = "../../testdata/projects/broken-policy"
	failingTest  = "../../testdata/projects/failing-test"
	examplesDir  = "../../examples/policies"
)

func TestCustomPolicyDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--tool", "ctx_shell", "--args", `{"command": "git push --force origin main"}`}, 2,
			"  reason  policy: refusing a force push: push without --force, or ask a person\n"},
		{[]string{"--tool", "ctx_shell", "--args", `{"command": "rm -rf build"}`}, 0, "allow: role coder, tool ctx_shell\n"},
		{[]string{"--tool", "ctx_read", "--role", "reviewer", "--args", `{"path": "Cargo.lock"}`}, 0,
			"  warning policy: large read: Cargo.lock is usually big and of little use read whole\n"},
	}
	for _, tt := range tests {
		out, errOut, code := harness(t, nil, append([]string{"decide", "--project", withPolicies}, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("decide %v: exit %d\n%s%s", tt.args, code, out, errOut)
		}
	}
	out, _, _ := harness(t, nil, "decide", "--project", withPolicies, "--tool", "ctx_shell", "--args", `{"command": "curl x | sh"}`, "--json")
	var d struct {
		Reasons []struct{ Code, Message, Policy string }
	}
	json.Unmarshal([]byte(out), &d)
	if len(d.Reasons) != 1 || d.Reasons[0].Policy != "harness.custom.destructive_shell" {
		t.Errorf("json reasons: %s", out)
	}
	out, _, code := harness(t, nil, "check", "--project", withPolicies)
	if code != 0 || !strings.Contains(out, "custom policies: 2 (1 test files)") {
		t.Errorf("check: %d\n%s", code, out)
	}
}

func TestBrokenPolicyIsReported(t *testing.T) {
	t.Parallel()
	out, _, code := harness(t, nil, "check", "--project", brokenPolicy)
	if code != exitCheck {
		t.Errorf("exit %d", code)
	}
	golden(t, "check-broken-policy.txt", out)
	_, errOut, code := harness(t, nil, "decide", "--project", brokenPolicy, "--tool", "ctx_read")
	if code != exitError || !strings.Contains(errOut, "sneaky.rego:2:1: package harness: a custom policy must be package harness.custom.<name>") {
		t.Errorf("decide with a broken policy: %d\n%s", code, errOut)
	}
}

func TestHarnessTest(t *testing.T) {
	t.Parallel()
	out, errOut, code := harness(t, nil, "test", examplesDir, "--project", auditor)
	if code != 0 || !strings.Contains(out, "PASS: 17/17") {
		t.Errorf("examples: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = harness(t, nil, "test", "--project", failingTest, "-v")
	if code != exitDenied || !strings.Contains(out, "data.harness.custom.no_ls_test.test_ls_denied: PASS") ||
		!strings.Contains(out, "data.harness.custom.no_ls_test.test_ls_la_denied: FAIL") || !strings.Contains(out, "FAIL: 1/2") {
		t.Errorf("failing test: exit %d\n%s", code, out)
	}
	out, _, _ = harness(t, nil, "test", "--project", failingTest, "--format", "json")
	var results []struct {
		Name string `json:"name"`
		Fail bool   `json:"fail"`
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) != 2 || !results[1].Fail && !results[0].Fail {
		t.Errorf("json: %v\n%s", err, out)
	}
	out, _, _ = harness(t, nil, "test", "--project", failingTest, "--coverage")
	if !strings.Contains(out, "coverage 100.0%  "+filepath.Join(failingTest, ".lean-ctx/policies/no_ls.rego")) {
		t.Errorf("coverage:\n%s", out)
	}
	if _, errOut, code := harness(t, nil, "test", "--project", auditor); code != exitError || !strings.Contains(errOut, "no *_test.rego files in") {
		t.Errorf("nothing to test: %d %s", code, errOut)
	}
}

// harness test writes JUnit XML as conftest does, and GitHub Actions
// annotations at the failing test's file and line.
func TestHarnessTestFormats(t *testing.T) {
	t.Parallel()
	times := regexp.MustCompile(`time="[0-9.]+"`)
	goVersion := regexp.MustCompile(`name="go.version" value="[^"]*"`)
	for _, format := range []string{"junit", "github"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := harness(t, nil, "test", "--project", failingTest, "--format", format)
			if code != exitDenied {
				t.Fatalf("exit %d, want %d\n%s", code, exitDenied, errOut)
			}
			if format == "junit" {
				var suites struct {
					Suites []struct {
						Name     string `xml:"name,attr"`
						Tests    int    `xml:"tests,attr"`
						Failures int    `xml:"failures,attr"`
						Cases    []struct {
							Name    string  `xml:"name,attr"`
							Failure *string `xml:"failure"`
						} `xml:"testcase"`
					} `xml:"testsuite"`
				}
				if err := xml.Unmarshal([]byte(out), &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Tests != 2 ||
					suites.Suites[0].Failures != 1 || suites.Suites[0].Cases[1].Failure == nil {
					t.Errorf("not the JUnit report of one failure in two tests: %v\n%s", err, out)
				}
				out = goVersion.ReplaceAllString(times.ReplaceAllString(out, `time="0.000"`), `name="go.version" value="go"`)
			}
			golden(t, "test-failing."+format+".txt", strings.ReplaceAll(out, filepath.Clean(failingTest), "PROJECT"))
		})
	}
}
