package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// check reports a bad [[alerts]] at its file, line, column and key, never
// showing the webhook's URL; good ones are listed by name and events.
func TestCheckAlerts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, toml string
		code       int
		want       []string
	}{
		{"bad url", "[[alerts]]\nurl = \"ftp://hooks.example.com/s3cr3t\"\n", exitCheck,
			[]string{":2:1: alerts[1].url: want an http:// or https:// URL with a host", "1 error(s)"}},
		{"unknown event", "[[alerts]]\nurl = \"https://hooks.example.com/s3cr3t\"\n\n[[alerts]]\nurl = \"https://h.example.com/s3cr3t\"\nevents = [\"BudgetWarnin\"]\n", exitCheck,
			[]string{`:6:1: alerts[2].events: item 1: "BudgetWarnin" is not an event type`, `(did you mean "BudgetWarning"?)`}},
		{"good", "[[alerts]]\nname = \"ops\"\nurl = \"https://hooks.example.com/s3cr3t\"\nevents = [\"BudgetExhausted\", \"BudgetReset\"]\nformat = \"slack\"\n\n[[alerts]]\nurl = \"http://127.0.0.1:9/s3cr3t\"\n", exitOK,
			[]string{"alert ops: BudgetExhausted, BudgetReset, as slack\n", "alert alerts.2: every event, as json\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			file := filepath.Join(home, ".lean-ctx", "harness.toml")
			writeFile(t, file, tt.toml)
			out, errOut, code := harnessIn(t, home, nil, "check")
			if code != tt.code || strings.Contains(out+errOut, "s3cr3t") {
				t.Errorf("exit %d, want %d:\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
			if tt.code == exitCheck && !strings.Contains(out, file+":") {
				t.Errorf("the error does not name %s:\n%s", file, out)
			}
		})
	}
}
