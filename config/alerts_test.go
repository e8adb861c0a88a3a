package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/events"
)

// [[alerts]] and [metrics] of the user's file are read, with the alerts'
// defaults left to the sender (zero values).
func TestAlertsAndMetricsLoad(t *testing.T) {
	t.Parallel()
	user := write(t, `
[metrics]
token_sha256 = "`+strings.Repeat("ab", 32)+`"

[[alerts]]
name = "ops"
url = "https://hooks.example.com/services/T0/B0/secret"
events = ["BudgetExhausted", "PolicyViolation", "BudgetExhausted"]
format = "slack"
headers = {Authorization = "Bearer x"}
queue = 50
timeout = "2s"
retry_for = "1h"

[[alerts]]
url = "http://127.0.0.1:9000/hook"
`)
	c, err := Load(Files{User: user})
	if err != nil {
		t.Fatal(err)
	}
	want := []Alert{
		{Name: "ops", URL: "https://hooks.example.com/services/T0/B0/secret", Events: []string{"BudgetExhausted", "PolicyViolation"},
			Format: "slack", Headers: map[string]string{"Authorization": "Bearer x"}, Queue: 50, Timeout: 2 * time.Second, RetryFor: time.Hour},
		{Name: "alerts.2", URL: "http://127.0.0.1:9000/hook"},
	}
	if !reflect.DeepEqual(c.Alerts, want) {
		t.Errorf("alerts:\n got %+v\nwant %+v", c.Alerts, want)
	}
	if c.MetricsTokenSHA256 != strings.Repeat("ab", 32) || c.MetricsToken != "" {
		t.Errorf("metrics token: %q %q", c.MetricsToken, c.MetricsTokenSHA256)
	}
}

// Each error of an [[alerts]] or [metrics] is at its file, line, column
// and key; a project's file may set neither; no error shows a URL.
func TestAlertErrors(t *testing.T) {
	t.Parallel()
	const secretURL = "https://hooks.example.com/services/T0/B0/s3cr3t-path"
	tests := []struct {
		name          string
		user, project string
		want          []string
	}{
		{"unknown event", "[[alerts]]\nurl = \"http://x\"\nevents = [\"BudgetWarning\", \"BudgetExhaustd\"]\n", "",
			[]string{`:3:1: alerts[1].events: item 2: "BudgetExhaustd" is not an event type (want BudgetWarning, BudgetExhausted, PolicyViolation, RoleChanged, BudgetReset, ApprovalRequested) (did you mean "BudgetExhausted"?)`}},
		{"no events", "[[alerts]]\nurl = \"http://x\"\nevents = []\n", "", []string{`:3:1: alerts[1].events: want at least one of`}},
		{"bad scheme", "[[alerts]]\nurl = \"ftp://hooks.example.com/x\"\n", "", []string{`:2:1: alerts[1].url: want an http:// or https:// URL with a host`}},
		{"no host", "[[alerts]]\nurl = \"https:///services\"\n", "", []string{`:2:1: alerts[1].url: want an http:// or https:// URL with a host`}},
		{"not a URL", "[[alerts]]\nurl = \"" + secretURL + "%zz\"\n", "", []string{`:2:1: alerts[1].url: want an http://`}},
		{"missing url, second alert", "[[alerts]]\nurl = \"http://x\"\n\n[[alerts]]\nname = \"b\"\n", "", []string{`:4:1: alerts[2]: url is missing`}},
		{"unknown key", "[[alerts]]\nurl = \"http://x\"\nretry = \"1m\"\n", "", []string{`:3:1: alerts[1].retry: unknown key "retry" (want name, url, events, format, headers, queue, timeout, retry_for)`}},
		{"bad format", "[[alerts]]\nurl = \"http://x\"\nformat = \"xml\"\n", "", []string{`:3:1: alerts[1].format: string "xml": want "json"`}},
		{"bad queue", "[[alerts]]\nurl = \"http://x\"\nqueue = 0\n", "", []string{`:3:1: alerts[1].queue: integer 0: want a whole number from 1 to 100000`}},
		{"bad timeout", "[[alerts]]\nurl = \"http://x\"\ntimeout = \"1h\"\n", "", []string{`:3:1: alerts[1].timeout: "1h": want a duration from 100ms to 1m0s`}},
		{"bad header", "[[alerts]]\nurl = \"http://x\"\nheaders = {\"X Bad\" = \"v\"}\n", "", []string{`:3:1: alerts[1].headers: "X Bad" is not a header name`}},
		{"same name twice", "[[alerts]]\nname = \"a\"\nurl = \"http://x\"\n[[alerts]]\nname = \"a\"\nurl = \"http://y\"\n", "", []string{`:5:1: alerts[2].name: the name "a" is used twice`}},
		{"not an array", "alerts = 3\n", "", []string{`:1:1: alerts: want an array of tables`}},
		{"project may not send alerts", "", "[[alerts]]\nurl = \"" + secretURL + "\"\n", []string{
			`:1:1: [[alerts]] may only be set in the user's harness.toml`}},
		{"project may not set the metrics token", "", "[metrics]\ntoken = \"0123456789abcdef0\"\n", []string{
			`:2:1: metrics.token may only be set in the user's harness.toml`}},
		{"short metrics token", "[metrics]\ntoken = \"short\"\n", "", []string{`:2:1: metrics.token: want a token of at least 16 characters`}},
		{"bad metrics digest", "[metrics]\ntoken_sha256 = \"abc\"\n", "", []string{`:2:1: metrics.token_sha256: want the token's SHA-256, 64 hex digits`}},
		{"both metrics tokens", "[metrics]\ntoken = \"0123456789abcdef0\"\ntoken_sha256 = \"" + strings.Repeat("0", 64) + "\"\n", "", []string{
			`metrics.token_sha256: give token or token_sha256, one of them`}},
		{"unknown metrics key", "[metrics]\ntokn = \"x\"\n", "", []string{`:2:1: unknown key "tokn" in [metrics] (did you mean "token"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(Files{User: write(t, tt.user), Project: []string{write(t, tt.project)}})
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error shows the URL: %v", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) > 1 {
				lines = lines[1:] // "N errors:" heading
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant …%s…", i, lines[i], w)
				}
			}
		})
	}
}

// The alerts may send every harness event, and only those.
func TestAlertEventsAreTheEvents(t *testing.T) {
	t.Parallel()
	var types []string
	for _, e := range events.Types {
		types = append(types, string(e))
	}
	if !slices.Equal(AlertEvents, types) {
		t.Errorf("AlertEvents %v, events.Types %v", AlertEvents, types)
	}
}
