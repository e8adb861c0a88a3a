package budget

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckURL refuses what Open would refuse, without opening anything.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		url  string
		want string // "" for accepted, else a part of the error
	}{
		{"memory:", ""},
		{"memory://", ""},
		{"sqlite:" + filepath.Join(dir, "a.db"), ""},
		{"sqlite://" + filepath.Join(dir, "b.db"), ""},
		{filepath.Join(dir, "c.db"), ""},
		{"redis://127.0.0.1:1/0", ""}, // nothing listens there: only opening finds out
		{"rediss://user:pw@cache.example:6380/2", ""},
		{"postgres://localhost/x", `ledger "postgres://localhost/x": unknown scheme (want memory:, sqlite:PATH, redis://host:port/db, redis+cluster://host:port,... or redis+sentinel://host:port,.../master)`},
		{"", "ledger: empty URL"},
		{"sqlite:", "sqlite ledger: empty path"},
		{"sqlite:a.db?mode=ro", "query parameters are not supported"},
		{"redis://127.0.0.1:6379/x", `invalid database number: "x"`},
		{"redis+cluster://h1:7000,h2:7001", ""},
		{"redis+sentinel://h1:26379/mymaster", ""},
		{"redis+cluster://h1:7000/3", "has only database 0"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			err := CheckURL(tt.url)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
			if tt.want == "" || strings.HasPrefix(tt.url, "redis") {
				return
			}
			// Open gives the same error.
			if _, oerr := Open(context.Background(), tt.url, Options{}); oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("Open: %v; CheckURL: %v", oerr, err)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("CheckURL created %d files", len(entries))
	}
}

// A read-only store reads and never writes: a missing SQLite file is not
// created (the store is empty), and every change is refused.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "state", "ledger.db")
	existing := filepath.Join(dir, "ledger.db")
	k := Key{Agent: "a", Session: "s"}
	rw, err := Open(ctx, existing, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Charge(ctx, k, "", 10, 20); err != nil {
		t.Fatal(err)
	}
	rw.Close()

	for _, tt := range []struct {
		name     string
		url      string
		sessions int
	}{
		{"missing file", "sqlite:" + missing, 0},
		{"existing file", existing, 1},
		{"memory", "memory:", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(ctx, tt.url, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			list, err := s.Sessions(ctx, "")
			if err != nil || len(list) != tt.sessions {
				t.Errorf("sessions %v, %v; want %d", list, err, tt.sessions)
			}
			if c, err := s.Get(ctx, k, "day:2026-12-01"); err != nil || (tt.sessions == 1) != (c.Tokens == 10) {
				t.Errorf("get %+v, %v", c, err)
			}
			changes := map[string]func() error{
				"InitRole":     func() error { _, err := s.InitRole(ctx, k, "coder"); return err },
				"SetRole":      func() error { _, err := s.SetRole(ctx, k, "coder"); return err },
				"SwitchRole":   func() error { _, _, err := s.SwitchRole(ctx, k, "", "coder"); return err },
				"PinProject":   func() error { _, err := s.PinProject(ctx, k, "/p"); return err },
				"ReserveShell": func() error { _, _, err := s.ReserveShell(ctx, k, "", Counters{}); return err },
				"AddShell":     func() error { _, err := s.AddShell(ctx, k, ""); return err },
				"Charge":       func() error { _, err := s.Charge(ctx, k, "", 1, 1); return err },
				"Reset":        func() error { return s.Reset(ctx, k) },
				"ResetAgent":   func() error { return s.ResetAgent(ctx, "a", "total") },
			}
			for name, change := range changes {
				if err := change(); !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s: %v, want ErrReadOnly", name, err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing ledger's directory was created (%v)", err)
	}
	rw, err = Open(ctx, existing, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if c, err := rw.Get(ctx, k, ""); err != nil || c.Tokens != 10 || c.Role != "" {
		t.Errorf("the existing ledger changed: %+v, %v", c, err)
	}
}
