package hookd

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentharness/harness/app"
)

// A daemon with --metrics serves its decisions and charges on loopback,
// with the user's [metrics] token; a listener off loopback is refused
// unless allowed, and then without a token and TLS too.
func TestDaemonMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const token = "metrics-token-0123456789"
	cfg := filepath.Join(w.home, ".lean-ctx", "harness.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[metrics]\ntoken = \""+token+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := app.Env{Home: w.home, WorkDir: w.home, Getenv: func(string) string { return "" }}
	addrs := make(chan string, 1)
	re := regexp.MustCompile(`metrics on http://(\S+)/metrics`)
	logf := func(f string, a ...any) {
		line := fmt.Sprintf(f, a...)
		t.Log(line)
		if m := re.FindStringSubmatch(line); m != nil {
			addrs <- m[1]
		}
	}
	sock, _ := serve(t, Options{Metrics: "127.0.0.1:0", Env: env, Logf: logf})
	var addr string
	select {
	case addr = <-addrs:
	case <-time.After(30 * time.Second): // a hang's bound
		t.Fatal("the daemon never said where its metrics are")
	}
	for _, event := range []string{"PreToolUse", "PostToolUse"} {
		if _, ok := Call(sock, w.request(t, event, "m")); !ok {
			t.Fatalf("%s: the daemon did not take the call", event)
		}
	}
	get := func(path, auth string) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := get("/metrics", ""); resp.StatusCode != 401 {
		t.Errorf("/metrics without the token: %d", resp.StatusCode)
	}
	if resp := get("/readyz", ""); resp.StatusCode != 200 {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}
	resp := get("/metrics", token)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	decided, tokens := 0.0, 0.0
	for _, m := range fams["harness_decisions_total"].GetMetric() {
		decided += m.GetCounter().GetValue()
		for _, l := range m.GetLabel() {
			if l.GetName() == "role" && l.GetValue() != "team" {
				t.Errorf("decision in role %s, want team", l.GetValue())
			}
		}
	}
	for _, m := range fams["harness_charged_tokens_total"].GetMetric() {
		tokens += m.GetCounter().GetValue()
	}
	if decided != 1 || tokens == 0 {
		t.Errorf("%v decisions, %v tokens charged; want 1 and some", decided, tokens)
	}

	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{Metrics: "0.0.0.0:0"}, "not a loopback address"},
		{Options{Metrics: "0.0.0.0:0", AllowRemote: true}, "needs a token"},
		{Options{Metrics: "nonsense"}, "want host:port"},
	} {
		tt.o.Env = app.Env{Home: t.TempDir(), Getenv: func(string) string { return "" }}
		tt.o.Socket = filepath.Join(t.TempDir(), "s.sock")
		if err := Serve(context.Background(), tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--metrics %s: %v, want %q", tt.o.Metrics, err, tt.want)
		}
	}
}
