package metrics

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// The Grafana dashboard of examples/ queries only metrics the harness
// has, grouped by labels they have: a rename here breaks this test, not
// the operator's dashboard.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../examples/grafana/agent-harness.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	// Every family with a series, to know their labels.
	m := New("test")
	m.Decided(contract.Decision{Decision: contract.Allow}, time.Millisecond, nil)
	m.Charged("a", "r", contract.Usage{Tokens: 1, CostMicros: 1, Shell: 1})
	m.Charged("a", "r", contract.Usage{Shell: -1})
	m.Emit(events.Event{Type: events.BudgetExhausted, Budget: &events.Budget{Dimension: "tokens"}})
	m.LedgerOp("get", time.Millisecond, nil)
	m.UpstreamCall("u", "tools/call", time.Millisecond, ResultOK)
	m.UpstreamRestart("u", errors.New("x"))
	m.AlertDelivered("a")
	m.AlertFailed("a")
	m.AlertDropped("a", DropGaveUp, 1)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string][]string{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if !slices.Contains(labels[f.GetName()], l.GetName()) {
					labels[f.GetName()] = append(labels[f.GetName()], l.GetName())
				}
			}
		}
		if _, ok := labels[f.GetName()]; !ok {
			labels[f.GetName()] = nil
		}
	}
	for _, name := range m.Names() {
		if _, ok := labels[name]; !ok {
			t.Errorf("%s has no series in this test: give it one", name)
		}
	}
	metric := regexp.MustCompile(`harness_[a-z_]+`)
	by := regexp.MustCompile(`by \(([a-z_, ]+)\)`)
	used := map[string]bool{}
	exprs := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			exprs++
			var names []string
			for _, n := range metric.FindAllString(target.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(n, suffix); ok && strings.HasSuffix(base, "_seconds") {
						n = base
					}
				}
				if _, ok := labels[n]; !ok {
					t.Errorf("panel %q queries %s, which the harness does not have", p.Title, n)
				}
				names = append(names, n)
				used[n] = true
			}
			for _, group := range by.FindAllStringSubmatch(target.Expr, -1) {
				for _, l := range strings.Split(group[1], ",") {
					l = strings.TrimSpace(l)
					ok := l == "le" || l == "job"
					for _, n := range names {
						ok = ok || slices.Contains(labels[n], l)
					}
					if !ok {
						t.Errorf("panel %q groups by %s, a label of none of %v", p.Title, l, names)
					}
				}
			}
		}
	}
	if exprs < 20 {
		t.Errorf("%d queries in the dashboard", exprs)
	}
	for _, name := range m.Names() {
		if !used[name] && name != "harness_build_info" {
			t.Errorf("the dashboard shows nothing of %s", name)
		}
	}
}
