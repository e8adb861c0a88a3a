package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/agentharness/harness/policy"
)

// opaBinary finds the real opa CLI: $OPA_BIN, the repository's bin/opa
// (`make tools` builds it), or opa on the PATH. Without it the test fails:
// the compiled bundle must be checked by the real tool.
func opaBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OPA_BIN"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../bin/opa"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("opa"); err == nil {
		return p
	}
	t.Fatal("the opa CLI was not found: run `make tools` (it builds bin/opa from the Go module proxy) or set OPA_BIN")
	return ""
}

func runOPA(t *testing.T, opa string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(opa, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("opa %v: %v", args, err)
	}
	return out.String(), 0
}

func TestCompiledBundleWithOPACLI(t *testing.T) {
	t.Parallel()
	opa := opaBinary(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	if out, errOut, code := harness(t, nil, "compile", "--project", auditor, "--out", dir); code != 0 {
		t.Fatalf("compile: exit %d\n%s%s", code, out, errOut)
	}

	// opa test, in directory mode and in bundle mode.
	for _, args := range [][]string{{"test", dir}, {"test", "-b", dir}} {
		out, code := runOPA(t, opa, args...)
		if code != 0 || !regexp.MustCompile(`PASS: (\d+)/(\d+)`).MatchString(out) {
			t.Fatalf("opa %v: exit %d\n%s", args, code, out)
		}
		m := regexp.MustCompile(`PASS: (\d+)/(\d+)`).FindStringSubmatch(out)
		if m[1] != m[2] || m[1] == "0" {
			t.Errorf("opa %v: %s", args, m[0])
		}
	}

	// opa build accepts the directory as a bundle.
	tarball := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if out, code := runOPA(t, opa, "build", "-b", dir, "-o", tarball); code != 0 {
		t.Fatalf("opa build: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(tarball); err != nil || fi.Size() == 0 {
		t.Fatalf("opa build wrote no bundle: %v", err)
	}

	// opa eval on the bundle gives the decision harness decide gives.
	cases := []policy.Input{
		{Role: "reviewer", Tool: "ctx_shell", Budget: policy.Usage{Tokens: 50000, CostMicros: 500000}},
		{Role: "security-auditor", Tool: "ctx_read", Budget: policy.Usage{Tokens: 90000}},
		{Role: "coder", Tool: "ctx_shell", Budget: policy.Usage{Shell: 100}},
		{Role: "ops", Tool: "ctx_execute"},
	}
	for _, in := range cases {
		in.Arguments = map[string]any{}
		input := filepath.Join(t.TempDir(), "input.json")
		b, _ := json.Marshal(in)
		if err := os.WriteFile(input, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := runOPA(t, opa, "eval", "-b", dir, "-i", input, "--format", "raw", "data.harness.decision")
		if code != 0 {
			t.Fatalf("opa eval: exit %d\n%s", code, out)
		}
		var fromOPA, fromHarness map[string]any
		if err := json.Unmarshal([]byte(out), &fromOPA); err != nil {
			t.Fatalf("opa eval output: %v\n%s", err, out)
		}
		hout, _, _ := harness(t, nil, "decide", "--project", auditor, "--role", in.Role, "--tool", in.Tool, "--json",
			"--tokens", itoa(in.Budget.Tokens), "--shell", itoa(in.Budget.Shell), "--cost", policy.FormatUSD(in.Budget.CostMicros))
		if err := json.Unmarshal([]byte(hout), &fromHarness); err != nil {
			t.Fatal(err)
		}
		delete(fromHarness, "status_line")
		if !reflect.DeepEqual(fromOPA, fromHarness) {
			t.Errorf("%s/%s: opa eval and harness decide disagree:\nopa:     %s\nharness: %s", in.Role, in.Tool, out, hout)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
