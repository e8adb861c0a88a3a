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

// ProjectBundle is the bundle folder of a project's policies (see
// custom.FindDirs): "policies/project", and below it those of its layers.
const ProjectBundle = "policies/project"

// fromProject reports whether m is one of a project's policies.
func fromProject(m compiler.Module) bool {
	return m.Name == ProjectBundle || strings.HasPrefix(m.Name, ProjectBundle+"/")
}

// checkPackages reports custom modules, policies and tests, outside
// harness.custom.<name> (a bundle that a stock OPA serves holds the tests
// too, as modules like the others), and a project's module in the package
// of one of the user's policies: Rego joins the rules of every module of a package, so
// the project's module would add to the user's rules (a definition of a
// helper that a deny tests with not) and undo its refusals. Every problem
// names the file and line.
func checkPackages(custom []compiler.Module) strict.ErrorList {
	var errs strict.ErrorList
	type placed struct {
		file, pkg string
		line      int
	}
	users := map[string]string{} // package → a user's policy file in it
	var projects []placed        // a project's policies
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
		oneName := isCustom && name != "" && !strings.Contains(name, ".")
		switch {
		case test && !oneName:
			errs = append(errs, &strict.Error{File: m.Location(), Line: line, Col: 1,
				Msg: fmt.Sprintf("package %s: a test must be in a package %s<name> (e.g. package %s<name>_test): in the bundle a stock OPA serves, a test is a module like the others, and must not add to the data or the harness's rules", strict.Clip(pkg), CustomPrefix, CustomPrefix)})
		case test && fromProject(m):
			projects = append(projects, placed{m.Location(), pkg, line})
		case test:
		case !oneName:
			errs = append(errs, &strict.Error{File: m.Location(), Line: line, Col: 1,
				Msg: fmt.Sprintf("package %s: a custom policy must be package %s<name>, one name (it may only add deny and warn rules)", strict.Clip(pkg), CustomPrefix)})
		case fromProject(m):
			projects = append(projects, placed{m.Location(), pkg, line})
		default:
			if _, ok := users[pkg]; !ok {
				users[pkg] = m.Location()
			}
		}
	}
	for _, p := range projects {
		if file, ok := users[p.pkg]; ok {
			errs = append(errs, &strict.Error{File: p.file, Line: p.line, Col: 1, Msg: fmt.Sprintf(
				"package %s is the package of the user's policy %s: a project's policy may not join it, since its rules would add to the user's (rename the package)",
				strict.Clip(p.pkg), file)})
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
