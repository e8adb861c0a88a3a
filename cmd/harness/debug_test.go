package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// $HARNESS_DEBUG_ADDR serves the runtime's profiles on loopback only.
func TestServeDebugAddr(t *testing.T) {
	t.Parallel()
	_, errOut, code := harness(t, map[string]string{"HARNESS_DEBUG_ADDR": "0.0.0.0:0"}, "serve", "--", "true")
	if code != exitError || !strings.Contains(errOut, `HARNESS_DEBUG_ADDR: "0.0.0.0:0" is not a loopback address`) {
		t.Errorf("a debug address off loopback: exit %d: %s", code, errOut)
	}
	addr, stop, err := serveDebug("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "goroutine profile: total ") {
		t.Errorf("the goroutine profile: %.200s", b)
	}
}
