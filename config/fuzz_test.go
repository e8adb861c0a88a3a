package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfig: any file either loads or fails with errors that name it; a
// loaded configuration is usable (its default model is priced, its mode is
// known, its tool names are exact).
func FuzzConfig(f *testing.F) {
	f.Add("[ledger]\nurl = \"memory:\"\nttl = \"1h\"\n[enforcement]\nmode = \"shadow\"\n")
	f.Add("[cost]\ndefault_model = \"m\"\n[cost.models.m]\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 2.5\n")
	f.Add("[tools]\nshell = [\"a\", \"b\"]\nexempt = []\n")
	f.Fuzz(func(t *testing.T, src string) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Files{User: path})
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, err := c.Prices.Price(""); err != nil {
			t.Fatalf("loaded without a price for the default model: %v", err)
		}
		if c.Mode != Enforce && c.Mode != Shadow {
			t.Fatalf("mode %q", c.Mode)
		}
		for _, n := range append(append([]string{}, c.ShellTools...), c.ExemptTools...) {
			if n == "" || strings.Contains(n, "*") {
				t.Fatalf("tool name %q", n)
			}
		}
	})
}
