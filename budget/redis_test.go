package budget

import (
	"context"
	"os"
	"testing"

	"github.com/agentharness/harness/internal/testredis"
	"github.com/redis/go-redis/v9"
)

func redisURL(t testing.TB) string { return testredis.URL(t) }

// quiet drops go-redis's own log lines (Sentinel lookups, failovers), which
// would fall between the lines of the tests' and benchmarks' output.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	redis.SetLogger(quiet{})
	code := m.Run()
	testredis.Stop()
	os.Exit(code)
}
