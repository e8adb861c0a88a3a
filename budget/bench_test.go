package budget

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentharness/harness/internal/testredis"
)

// openBench opens a fresh store of the named kind for a benchmark.
func openBench(b *testing.B, name string) Store {
	b.Helper()
	ctx := context.Background()
	var s Store
	var err error
	switch name {
	case "memory":
		s = NewMemory()
	case "sqlite":
		s, err = OpenSQLite(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	case "redis":
		s, err = OpenRedis(ctx, redisURL(b), Options{Prefix: fmt.Sprintf("bench:%d:", time.Now().UnixNano())})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchSession opens a store of the named kind with one session in a role.
func benchSession(b *testing.B, name string) (Store, Key, Counters) {
	b.Helper()
	s := openBench(b, name)
	k := Key{Agent: "bench", Session: "s"}
	cur, err := s.InitRole(context.Background(), k, "coder")
	if err != nil {
		b.Fatal(err)
	}
	return s, k, cur
}

// BenchmarkReserve measures one shell reservation: the compare-and-swap a
// shell call's decision makes (one statement, or one Redis round trip).
func BenchmarkReserve(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"memory", "sqlite", "redis"} {
		b.Run(name, func(b *testing.B) {
			s, k, cur := benchSession(b, name)
			var err error
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				if cur, ok, err = s.ReserveShell(ctx, k, "", cur); err != nil || !ok {
					b.Fatalf("reserve: ok=%v %v", ok, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
		})
	}
}

// BenchmarkReserveCommit measures a shell call's two ledger operations,
// the reservation and the commit of its tokens and cost, from one caller.
func BenchmarkReserveCommit(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"memory", "sqlite", "redis"} {
		b.Run(name, func(b *testing.B) {
			s, k, cur := benchSession(b, name)
			var err error
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, ok, err := s.ReserveShell(ctx, k, "", cur); err != nil || !ok {
					b.Fatalf("reserve: ok=%v %v", ok, err)
				}
				if cur, err = s.Charge(ctx, k, "", 120, 1200); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}

// BenchmarkReserveParallel is reserve+commit from several goroutines of
// one process, each with its own session, as a gateway serving many agents.
func BenchmarkReserveParallel(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"sqlite", "redis"} {
		b.Run(name, func(b *testing.B) {
			s := openBench(b, name)
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				k := Key{Agent: "bench", Session: fmt.Sprint("p-", n.Add(1))}
				cur := Counters{}
				for pb.Next() {
					if _, ok, err := s.ReserveShell(ctx, k, "", cur); err != nil || !ok {
						b.Errorf("reserve: ok=%v %v", ok, err)
						return
					}
					var err error
					if cur, err = s.Charge(ctx, k, "", 120, 1200); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}

// BenchmarkReserveCallers measures shell reservations on Redis from many
// callers at once, each with a session of its own (a gateway serving many
// agents): one caller, then 16 and 256 in parallel. "confirmed" is a master
// with a replica under Sentinel, where each reservation waits until the
// replica has it (WAIT).
func BenchmarkReserveCallers(b *testing.B) {
	ctx := context.Background()
	for _, store := range []string{"redis", "confirmed"} {
		b.Run(store, func(b *testing.B) {
			url := redisURL(b)
			if store == "confirmed" {
				url = testredis.StartSentinel(b, 1).URL()
			}
			for _, callers := range []int{1, 16, 256} {
				b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
					s, err := OpenRedis(ctx, url, Options{Prefix: fmt.Sprintf("bench:%d:", time.Now().UnixNano())})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					reserve := func(k Key) func() bool {
						cur := Counters{}
						return func() bool {
							var ok bool
							if cur, ok, err = s.ReserveShell(ctx, k, "", cur); err != nil || !ok {
								b.Errorf("reserve: ok=%v %v", ok, err)
								return false
							}
							return true
						}
					}
					b.ReportAllocs()
					if callers == 1 {
						next := reserve(Key{Agent: "bench", Session: "one"})
						for b.Loop() {
							if !next() {
								return
							}
						}
					} else {
						var n atomic.Int64
						b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
						b.RunParallel(func(pb *testing.PB) {
							next := reserve(Key{Agent: "bench", Session: fmt.Sprint("p-", n.Add(1))})
							for pb.Next() && next() {
							}
						})
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
					// Whether callers queued for a connection of the pool
					// (go-redis's default: 10 per CPU), and for how long.
					st := s.client.PoolStats()
					b.ReportMetric(float64(st.TotalConns), "conns")
					b.ReportMetric(float64(st.WaitDurationNs)/float64(b.N), "pool-wait-ns/op")
				})
			}
		})
	}
}

// BenchmarkTokenCount counts the o200k_base tokens of 100 KB tool outputs
// of several kinds; b.SetBytes makes it report MB/s. "log" is a build log
// (prose, paths, numbers), "file" the numbered lines the gateway's
// benchmark reads, "go" this package's own source, "prose" the project's
// README (English and Markdown), "json" the project's JSON files (an npm
// lock file, a dashboard, a report), "mixed" text with letters, digits
// and punctuation outside ASCII (the general way). The memo of piece
// counts is warm, as it is in a running gateway. With -cpu 1 a text is
// counted on one core.
func BenchmarkTokenCount(b *testing.B) {
	const size = 100 * 1024
	repeat := func(line func(i int) string) string {
		var sb strings.Builder
		for i := 0; sb.Len() < size; i++ {
			sb.WriteString(line(i))
		}
		return sb.String()
	}
	files := func(pattern ...string) string {
		var files []string
		for _, p := range pattern {
			f, _ := filepath.Glob(p)
			files = append(files, f...)
		}
		var sb strings.Builder
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			sb.Write(raw)
		}
		return sb.String()
	}
	for _, c := range []struct {
		name string
		text string
	}{
		{"log", repeat(func(i int) string {
			return fmt.Sprintf("[%04d] compiling src/pkg%d/file_%d.go: ok (%d ms), warnings: unused variable 'x%d'\n", i, i%17, i, i*7%300, i)
		})},
		{"file", repeat(func(i int) string {
			return fmt.Sprintf("line %d of the file: the quick brown fox jumps over the lazy dog\n", i)
		})},
		{"go", files("*.go")},
		{"prose", files("../README.md")},
		{"json", files("../e2e/package-lock.json", "../examples/grafana/*.json", "../report/testdata/*.json")},
		{"mixed", repeat(func(i int) string {
			return fmt.Sprintf("Ärger № %d — «naïve» café, Σύνολο %d€; 東京 %d件\n", i, i*3, i%97)
		})},
	} {
		text := c.text
		for len(text) < size {
			text += c.text
		}
		text = strings.ToValidUTF8(text[:size], "")
		b.Run(c.name, func(b *testing.B) {
			tk := NewTokenizer()
			n, err := tk.Count(text)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "tokens")
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tk.Count(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallLedger measures a tool call's ledger operations as the
// gateway makes them, under a request's context (one that can end): the
// read its decision makes, then the charge of its result against the
// counters read. The reference is the memory store, which keeps nothing.
func BenchmarkCallLedger(b *testing.B) {
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			s, k, _ := benchSession(b, name)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				cur, err := s.Get(ctx, k, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := s.ChargeIf(ctx, k, "", cur, 20, 3); err != nil || !ok {
					b.Fatalf("charge: ok=%v %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkAfterIdle measures a charge and a shell reservation as a
// gateway makes them: after the ledger has been idle for as long as an
// upstream takes to answer (a millisecond here), when the caches of the
// machine hold other processes' work. It reports the p50 and p90 of the
// change alone (ns/op includes the idle time). The reference is the
// memory store, in the same run; BenchmarkCallLedger makes the charge back
// to back.
func BenchmarkAfterIdle(b *testing.B) {
	for _, op := range []string{"charge", "reserve"} {
		for _, name := range []string{"memory", "sqlite"} {
			b.Run(op+"/"+name, func(b *testing.B) {
				s, k, _ := benchSession(b, name)
				ctx := context.Background()
				took := make([]time.Duration, 0, b.N)
				for b.Loop() {
					time.Sleep(time.Millisecond) // idle, as while an upstream works; not a synchronisation
					cur, err := s.Get(ctx, k, "")
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					var ok bool
					if op == "charge" {
						_, ok, err = s.ChargeIf(ctx, k, "", cur, 20, 3)
					} else {
						_, ok, err = s.ReserveShell(ctx, k, "", cur)
					}
					took = append(took, time.Since(start))
					if err != nil || !ok {
						b.Fatalf("%s: ok=%v %v", op, ok, err)
					}
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(took[len(took)*9/10].Nanoseconds())/1e3, "p90-µs")
			})
		}
	}
}
