package policy

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentharness/harness/compiler"
)

// TestRun is what RunTests found.
type TestRun struct {
	Results []*tester.Result
	// Coverage, when asked for, covers every module, by file.
	Coverage *cover.Report
	// Modules are the parsed modules, by file, as the tester saw them.
	Modules map[string]*ast.Module
}

// RunTests runs the test_ rules of the bundle's *_test.rego modules with the
// bundle's data, through OPA's tester and with the harness's capabilities:
// the results `opa test DIR` gives on the bundle written to DIR. progress,
// if set, hears of each result: how many of how many.
func RunTests(ctx context.Context, b *compiler.Bundle, coverage bool, progress func(done, total int)) (*TestRun, error) {
	run := &TestRun{Modules: map[string]*ast.Module{}}
	total := 0 // the test rules, as the tester counts them (a rule of several bodies is one test)
	for _, m := range b.Modules {
		parsed, err := ast.ParseModuleWithOpts(m.Location(), string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, regoErrors(err)
		}
		run.Modules[m.Location()] = parsed
		seen := map[string]bool{}
		for _, r := range parsed.Rules {
			name := r.Head.Name.String()
			if (strings.HasPrefix(name, "test_") || strings.HasPrefix(name, "todo_test_")) && !seen[name] {
				seen[name] = true
				total++
			}
		}
	}
	runner := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetCompiler(ast.NewCompiler().WithCapabilities(Capabilities()).WithEnablePrintStatements(true)).
		SetStore(inmem.NewFromReader(bytes.NewReader(b.Data))).
		SetModules(run.Modules).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		// opa test gives a test 5 s; the harness's own suite, run with the
		// race detector on a busy machine, needs more for its larger tests.
		SetTimeout(time.Minute)
	var cov *cover.Cover
	if coverage {
		cov = cover.New()
		runner.SetCoverageQueryTracer(cov)
	}
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("running Rego tests: %w", err)
	}
	for r := range ch {
		run.Results = append(run.Results, r)
		if progress != nil {
			progress(len(run.Results), max(total, len(run.Results)))
		}
	}
	if cov != nil {
		report := cov.Report(run.Modules)
		run.Coverage = &report
	}
	return run, nil
}
