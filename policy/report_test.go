package policy

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// results are a passing, a failing (at an expression), an erring and a
// skipped test, in a file whose name needs escaping.
func results() chan *tester.Result {
	file := "pol,icies/a:b_test.rego"
	loc := func(row int) *ast.Location { return &ast.Location{File: file, Row: row} }
	failedAt := ast.MustParseExpr("x == 1")
	failedAt.Location = loc(7)
	ch := make(chan *tester.Result, 4)
	for _, r := range []*tester.Result{
		{Location: loc(3), Package: "data.p_test", Name: "test_pass", Duration: time.Millisecond},
		{Location: loc(6), Package: "data.p_test", Name: "test_fail", Fail: true, FailedAt: failedAt, Output: []byte("printed\n")},
		{Location: loc(9), Package: "data.p_test", Name: "test_error", Error: errors.New("100% wrong\nsecond line")},
		{Location: loc(12), Package: "data.q_test", Name: "todo_test_later", Skip: true},
	} {
		ch <- r
	}
	close(ch)
	return ch
}

func TestGitHubReporter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := (GitHubReporter{Output: &out}).Report(results()); err != nil {
		t.Fatal(err)
	}
	want := `::group::pol,icies/a:b_test.rego: 4 tests
::error file=pol%2Cicies/a%3Ab_test.rego,line=7::FAIL data.p_test.test_fail
::error file=pol%2Cicies/a%3Ab_test.rego,line=9::ERROR data.p_test.test_error: 100%25 wrong%0Asecond line
::notice file=pol%2Cicies/a%3Ab_test.rego,line=12::SKIP data.q_test.todo_test_later
::endgroup::
4 tests, 1 passed, 1 failed, 1 errors, 1 skipped
`
	if out.String() != want {
		t.Errorf("\n got %s\nwant %s", out.String(), want)
	}
}

func TestJUnitReporter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := (JUnitReporter{Output: &out}).Report(results()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<testsuite tests="3" failures="2" time="0.001" name="data.p_test">`,
		`<testcase classname="data.p_test" name="test_pass" time="0.001"></testcase>`,
		`<failure message="Failed" type="">pol,icies/a:b_test.rego:7: fail: data.p_test.test_fail: failed at equal(x, 1)&#xA;printed</failure>`,
		`<failure message="Failed" type="">pol,icies/a:b_test.rego:9: error: 100% wrong&#xA;second line</failure>`,
		`<testsuite tests="1" failures="0" time="0.000" name="data.q_test">`,
		`<skipped message="skipped (a todo_ test)"></skipped>`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in\n%s", want, out.String())
		}
	}
}
