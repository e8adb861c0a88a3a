package testredis

import (
	"os/exec"
	"strings"
	"testing"
)

// A server started on a port another server holds cannot bind it, and the
// other's answer to PING must not pass for its own: parallel tests chose
// one port, and a cluster was made of a node twice ("Node ... is not
// empty"). It is refused, so that StartServer tries another port.
func TestAnotherServersAnswerIsNotThisOnes(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("Redis is needed: %v", err)
	}
	first := StartServer(t)
	s, err := startAt(bin, t.TempDir(), first.Port, nil)
	if err == nil {
		s.stop()
		t.Fatalf("a server on the port of another (%d) was taken as started", first.Port)
	}
	if !strings.Contains(err.Error(), "exited") && !strings.Contains(err.Error(), "another server") {
		t.Errorf("not why it failed: %v", err)
	}
	if err := first.Admin.Ping(t.Context()).Err(); err != nil {
		t.Errorf("the first server is gone: %v", err)
	}
}
