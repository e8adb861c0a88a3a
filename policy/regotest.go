package policy

import (
	"bytes"
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentharness/harness/compiler"
)

// RunTests runs the test_ rules of the bundle's *_test.rego modules with the
// bundle's data, through OPA's tester: the same results `opa test DIR` gives
// on the bundle written to DIR.
func RunTests(ctx context.Context, b *compiler.Bundle) ([]*tester.Result, error) {
	modules := map[string]*ast.Module{}
	for _, m := range b.Modules {
		parsed, err := ast.ParseModuleWithOpts(m.Name, string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		modules[m.Name] = parsed
	}
	store := inmem.NewFromReader(bytes.NewReader(b.Data))
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetStore(store).
		SetModules(modules).
		RaiseBuiltinErrors(true).
		RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("running Rego tests: %w", err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	return results, nil
}
