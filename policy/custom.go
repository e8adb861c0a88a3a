package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/internal/strict"
)

// CustomPrefix is the package every custom policy lives under:
// harness.custom.<name>.
const CustomPrefix = "harness.custom."

// checkPackages reports custom modules outside harness.custom.<name> (tests
// may be anywhere under harness). Every problem names the file and line.
func checkPackages(custom []compiler.Module) strict.ErrorList {
	var errs strict.ErrorList
	for _, m := range custom {
		parsed, err := ast.ParseModuleWithOpts(m.Location(), string(m.Source), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, regoErrors(err)...)
			continue
		}
		pkg := strings.TrimPrefix(parsed.Package.Path.String(), "data.")
		at := parsed.Package.Location
		line := 0
		if at != nil {
			line = at.Row
		}
		test := strings.HasSuffix(m.Name, "_test.rego")
		name, isCustom := strings.CutPrefix(pkg, CustomPrefix)
		switch {
		case test && strings.HasPrefix(pkg, "harness."):
		case test:
			errs = append(errs, &strict.Error{File: m.Location(), Line: line, Col: 1,
				Msg: fmt.Sprintf("package %s: a test must be in a package under harness (e.g. package %s<name>_test)", strict.Clip(pkg), CustomPrefix)})
		case !isCustom || name == "" || strings.Contains(name, "."):
			errs = append(errs, &strict.Error{File: m.Location(), Line: line, Col: 1,
				Msg: fmt.Sprintf("package %s: a custom policy must be package %s<name>, one name (it may only add deny and warn rules)", strict.Clip(pkg), CustomPrefix)})
		}
	}
	return errs
}

// regoErrors turns OPA's parse and compile errors into file:line:col
// errors; other errors pass through in one Error.
func regoErrors(err error) strict.ErrorList {
	var list ast.Errors
	if errors.As(err, &list) {
		out := make(strict.ErrorList, 0, len(list))
		for _, e := range list {
			// The message may print terms of the file (an undefined
			// reference with its literals): cut what it quotes. Details,
			// which hold whole lines of the file, are left out.
			se := &strict.Error{Msg: strict.Clip(e.Message)}
			if e.Code != "" {
				se.Msg = e.Code + ": " + se.Msg
			}
			if e.Location != nil {
				se.File, se.Line, se.Col = e.Location.File, e.Location.Row, e.Location.Col
			}
			out = append(out, se)
		}
		return out.Sort()
	}
	return strict.ErrorList{{Msg: strict.Clip(err.Error())}}
}
