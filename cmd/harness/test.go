package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/policy"
)

// test runs the tests of custom policies against the compiled roles.
func (c *cli) test(args []string) int {
	fs, project := c.flags("test")
	verbose := fs.Bool("v", false, "print every test")
	coverage := fs.Bool("coverage", false, "report the coverage of the custom policies")
	format := fs.String("format", "pretty", "pretty or json")
	paths, err := parse(fs, args)
	if err != nil {
		return exitError
	}
	if *format != "pretty" && *format != "json" {
		return c.fail("test: --format %q: want pretty or json", *format)
	}
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	mods := h.Custom
	where := "the policy directories (" + strings.Join(dirPaths(h.PolicyDirs), ", ") + ")"
	if len(paths) > 0 {
		if mods, err = custom.LoadPaths(paths); err != nil {
			c.printErrors(err)
			return exitError
		}
		where = strings.Join(paths, ", ")
	}
	var tests int
	for _, m := range mods {
		if custom.IsTest(m) {
			tests++
		}
	}
	if tests == 0 {
		return c.fail("test: no *_test.rego files in %s", where)
	}
	ctx := c.env.ctx
	e, err := policy.New(ctx, h.Engine.Document(), mods...)
	if err != nil {
		c.printErrors(err)
		return exitCheck
	}
	run, err := policy.RunTests(ctx, e.Bundle(), *coverage)
	if err != nil {
		c.printErrors(err)
		return exitCheck
	}
	failed := slices.ContainsFunc(run.Results, func(r *tester.Result) bool { return r.Fail || r.Error != nil })
	ch := make(chan *tester.Result, len(run.Results))
	for _, r := range run.Results {
		ch <- r
	}
	close(ch)
	var reporter tester.Reporter = tester.PrettyReporter{Output: c.stdout, Verbose: *verbose, FailureLine: true}
	if *format == "json" {
		reporter = tester.JSONReporter{Output: c.stdout}
	}
	if *coverage && *format == "json" {
		// As `opa test --coverage`: the coverage report is the output.
		if err := c.writeJSON(customCoverage(run, mods)); err != nil {
			return c.fail("%v", err)
		}
	} else if err := reporter.Report(ch); err != nil {
		return c.fail("test: %v", err)
	}
	if *coverage && *format == "pretty" {
		rep := customCoverage(run, mods)
		fmt.Fprintln(c.stdout, "--------------------------------------------------------------------------------")
		for _, f := range slices.Sorted(maps.Keys(rep.Files)) {
			fmt.Fprintf(c.stdout, "coverage %5.1f%%  %s\n", rep.Files[f].Coverage, f)
		}
		fmt.Fprintf(c.stdout, "coverage %5.1f%%  (custom policies)\n", rep.Coverage)
	}
	if failed {
		return exitDenied
	}
	return exitOK
}

// customCoverage keeps the coverage of the custom policy files (not of
// their tests, nor of the harness's own policy).
func customCoverage(run *policy.TestRun, mods []compiler.Module) cover.Report {
	rep := cover.Report{Files: map[string]*cover.FileReport{}}
	for _, m := range mods {
		f, ok := run.Coverage.Files[m.Location()]
		if !ok || custom.IsTest(m) {
			continue
		}
		rep.Files[m.Location()] = f
		rep.CoveredLines += f.CoveredLines
		rep.NotCoveredLines += f.NotCoveredLines
	}
	if total := rep.CoveredLines + rep.NotCoveredLines; total > 0 {
		rep.Coverage = 100 * float64(rep.CoveredLines) / float64(total)
	}
	return rep
}

func dirPaths(dirs []custom.Dir) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = d.Path
	}
	return out
}
