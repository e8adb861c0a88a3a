package policy

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/jstemmer/go-junit-report/formatter"
	"github.com/jstemmer/go-junit-report/parser"
	"github.com/open-policy-agent/opa/v1/tester"
)

// JUnitReporter writes Rego test results as JUnit XML, as conftest writes
// its reports (with go-junit-report's formatter): one test suite per Rego
// package, one test case per test, in the order of the files, and for a
// test that fails or errs a failure that says where and why, with what it
// printed.
type JUnitReporter struct{ Output io.Writer }

// Report implements tester.Reporter.
func (r JUnitReporter) Report(ch chan *tester.Result) error {
	var report parser.Report
	suite := map[string]int{} // package → index in report.Packages
	for _, tr := range sorted(ch) {
		i, ok := suite[tr.Package]
		if !ok {
			i = len(report.Packages)
			suite[tr.Package] = i
			report.Packages = append(report.Packages, parser.Package{Name: tr.Package})
		}
		t := &parser.Test{Name: tr.Name, Duration: tr.Duration, Result: parser.PASS}
		switch {
		case tr.Skip:
			t.Result, t.Output = parser.SKIP, []string{"skipped (a todo_ test)"}
		case tr.Error != nil || tr.Fail:
			t.Result, t.Output = parser.FAIL, []string{failure(tr)}
		}
		if out := strings.TrimRight(string(tr.Output), "\n"); out != "" && t.Result == parser.FAIL {
			t.Output = append(t.Output, strings.Split(out, "\n")...)
		}
		pkg := &report.Packages[i]
		pkg.Tests = append(pkg.Tests, t)
		pkg.Duration += tr.Duration
	}
	return formatter.JUnitReportXML(&report, false, runtime.Version(), r.Output)
}

// GitHubReporter writes Rego test results as GitHub Actions workflow
// commands: a group per file, an ::error annotation at the file and line
// of each test that fails or errs (at the expression that failed, when
// known), a ::notice of each skipped one, and a summary line.
type GitHubReporter struct{ Output io.Writer }

// Report implements tester.Reporter.
func (r GitHubReporter) Report(ch chan *tester.Result) error {
	var files []string
	byFile := map[string][]*tester.Result{}
	for _, tr := range sorted(ch) {
		file := ""
		if tr.Location != nil {
			file = tr.Location.File
		}
		if _, ok := byFile[file]; !ok {
			files = append(files, file)
		}
		byFile[file] = append(byFile[file], tr)
	}
	var pass, fail, errs, skip int
	w := &errWriter{w: r.Output}
	for _, file := range files {
		results := byFile[file]
		w.printf("::group::%s: %d tests\n", escapeData(file), len(results))
		for _, tr := range results {
			name := tr.Package + "." + tr.Name
			switch {
			case tr.Skip:
				skip++
				w.printf("::notice %s::%s\n", properties(file, line(tr)), escapeData("SKIP "+name))
			case tr.Error != nil:
				errs++
				w.printf("::error %s::%s\n", properties(file, line(tr)), escapeData("ERROR "+name+": "+tr.Error.Error()))
			case tr.Fail:
				fail++
				w.printf("::error %s::%s\n", properties(file, line(tr)), escapeData("FAIL "+name))
			default:
				pass++
			}
		}
		w.printf("::endgroup::\n")
	}
	w.printf("%d tests, %d passed, %d failed, %d errors, %d skipped\n", pass+fail+errs+skip, pass, fail, errs, skip)
	return w.err
}

// sorted are the results of ch in the order of their files and lines (the
// tester runs tests in no fixed order), so that a report is the same from
// one run to the next.
func sorted(ch chan *tester.Result) []*tester.Result {
	var all []*tester.Result
	for tr := range ch {
		all = append(all, tr)
	}
	where := func(tr *tester.Result) (string, int) {
		if tr.Location == nil {
			return "", 0
		}
		return tr.Location.File, tr.Location.Row
	}
	slices.SortStableFunc(all, func(a, b *tester.Result) int {
		fa, ra := where(a)
		fb, rb := where(b)
		return cmp.Or(cmp.Compare(fa, fb), cmp.Compare(ra, rb), cmp.Compare(a.Package, b.Package), cmp.Compare(a.Name, b.Name))
	})
	return all
}

// failure says where a test failed or erred, and why.
func failure(tr *tester.Result) string {
	at := ""
	if tr.Location != nil {
		at = fmt.Sprintf("%s:%d: ", tr.Location.File, line(tr))
	}
	if tr.Error != nil {
		return at + "error: " + tr.Error.Error()
	}
	msg := at + "fail: " + tr.Package + "." + tr.Name
	if tr.FailedAt != nil {
		msg += ": failed at " + tr.FailedAt.String()
	}
	return msg
}

// line is the line of a result: of the expression that failed when known,
// else of the test.
func line(tr *tester.Result) int {
	switch {
	case tr.FailedAt != nil && tr.FailedAt.Location != nil:
		return tr.FailedAt.Location.Row
	case tr.Location != nil:
		return tr.Location.Row
	}
	return 0
}

// properties are the file and line of an annotation.
func properties(file string, line int) string {
	return fmt.Sprintf("file=%s,line=%d", escapeProperty(file), line)
}

// escapeData escapes a workflow command's message as the Actions toolkit
// does: '%', CR and LF.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value: as
// escapeData, and ':' and ','.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
