package budget

import (
	"os"
	"testing"

	"github.com/agentharness/harness/internal/testredis"
)

func redisURL(t testing.TB) string { return testredis.URL(t) }

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	code := m.Run()
	testredis.Stop()
	os.Exit(code)
}
