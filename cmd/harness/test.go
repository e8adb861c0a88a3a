package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/custom"
	"github.com/agentharness/harness/policy"
)

// testFormats are the output formats of harness test.
var testFormats = []string{"pretty", "json", "junit", "github"}

func (c *cli) testCmd() *cobra.Command {
	var verbose, coverage bool
	var format string
	cmd := &cobra.Command{
		Use:   "test [PATH]... [flags]",
		Short: "Run the custom policies' Rego tests against the compiled roles",
		Long: `Test runs the *_test.rego files of the custom policies (or of the files and
directories given) against the compiled roles, through OPA's tester, and prints
like opa test: -v for each test, --coverage for the custom policies' coverage.
--format junit writes JUnit XML (as conftest writes it: a test suite per Rego
package), --format github GitHub Actions annotations (::error file=…,line=…::…)
of the tests that fail.

Exit codes: 0 the tests pass, 2 a test failed, 3 a policy or test file has errors.`,
		Example: `  harness test
  harness test .lean-ctx/policies -v --coverage
  harness test --format junit > report.xml`,
		RunE: c.runs(func(cmd *cobra.Command, paths []string) int { return c.test(paths, verbose, coverage, format) }),
	}
	fs := cmd.Flags()
	fs.BoolVarP(&verbose, "verbose", "v", false, "print every test")
	fs.BoolVar(&coverage, "coverage", false, "report the coverage of the custom policies")
	fs.StringVar(&format, "format", "pretty", "the output `FORMAT`: "+strings.Join(testFormats, ", "))
	cmd.RegisterFlagCompletionFunc("format", completeWords(testFormats...))
	return cmd
}

// test runs the tests of custom policies against the compiled roles.
func (c *cli) test(paths []string, verbose, coverage bool, format string) int {
	if !slices.Contains(testFormats, format) {
		return c.fail("test: --format %q: want one of %s", format, strings.Join(testFormats, ", "))
	}
	if coverage && (format == "junit" || format == "github") {
		return c.fail("test: --coverage goes with --format pretty or json")
	}
	var err error
	meter := c.progress("harness test")
	defer meter.Done()
	meter.Say("loading the roles and policies")
	h, ok := c.load(c.params())
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
	meter.Say("compiling the policies")
	e, err := policy.New(ctx, h.Engine.Document(), mods...)
	if err != nil {
		c.printErrors(err)
		return exitCheck
	}
	run, err := policy.RunTests(ctx, e.Bundle(), coverage, func(done, total int) { meter.Count(int64(done), int64(total)) })
	meter.Done() // before the results
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
	// The output is the project's to fill (print's output, the values of
	// failed expressions, file names): it is shown printable, each format
	// in its own way (printableOutput).
	var out bytes.Buffer
	var reporter tester.Reporter
	switch format {
	case "pretty":
		reporter = tester.PrettyReporter{Output: &out, Verbose: verbose, FailureLine: true}
	case "json":
		reporter = tester.JSONReporter{Output: &out}
	case "junit":
		reporter = policy.JUnitReporter{Output: &out}
	case "github":
		reporter = policy.GitHubReporter{Output: &out}
	}
	if coverage && format == "json" {
		// As `opa test --coverage`: the coverage report is the output.
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(customCoverage(run, mods)); err != nil {
			return c.fail("%v", err)
		}
	} else if err := reporter.Report(ch); err != nil {
		return c.fail("test: %v", err)
	}
	if coverage && format == "pretty" {
		rep := customCoverage(run, mods)
		fmt.Fprintln(&out, "--------------------------------------------------------------------------------")
		for _, f := range slices.Sorted(maps.Keys(rep.Files)) {
			fmt.Fprintf(&out, "coverage %5.1f%%  %s\n", rep.Files[f].Coverage, f)
		}
		fmt.Fprintf(&out, "coverage %5.1f%%  (custom policies)\n", rep.Coverage)
	}
	io.WriteString(c.stdout, printableOutput(format, out.String()))
	if failed {
		return exitDenied
	}
	return exitOK
}

// printableOutput is a report of harness test in format, with every
// character a terminal would not print plainly escaped: in JSON as a \u
// escape (the same JSON), in JUnit XML as a character reference (the same
// XML), in the text formats as Printable shows it, line by line.
func printableOutput(format, s string) string {
	switch format {
	case "json":
		return printableJSON(s)
	case "junit":
		var b strings.Builder
		for _, r := range s {
			if r == '\n' || r == '\t' || strconv.IsPrint(r) {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, "&#x%X;", r)
			}
		}
		return b.String()
	}
	return printableLines(s)
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
