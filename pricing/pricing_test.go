package pricing

import (
	"strings"
	"testing"
)

func TestCost(t *testing.T) {
	t.Parallel()
	p := Default()
	p.Models["cheap"] = Price{InputMicrosPerMTok: 150_000, OutputMicrosPerMTok: 600_000} // $0.15 / $0.60
	tests := []struct {
		model   string
		in, out int64
		want    int64
	}{
		{"", 1_000_000, 0, 2_500_000},         // $2.50 for a million input tokens
		{"default", 0, 1_000_000, 10_000_000}, // $10 for a million output tokens
		{"", 1000, 500, 7500},                 // 0.0025 + 0.005 dollars
		{"", 1, 0, 3},                         // 2.5 micro-dollars, rounded up
		{"cheap", 10, 10, 8},                  // 1.5 + 6 = 7.5, rounded up
		{"", 0, 0, 0},
		{"", 1 << 40, 1 << 40, 13_743_895_347_200}, // large counts stay exact
	}
	for _, tt := range tests {
		if got, err := p.Cost(tt.model, tt.in, tt.out); err != nil || got != tt.want {
			t.Errorf("Cost(%q, %d, %d) = %d, %v; want %d", tt.model, tt.in, tt.out, got, err, tt.want)
		}
	}
	// A model the table does not know is charged the default price.
	if got, err := p.Cost("gpt-9", 1000, 500); err != nil || got != 7500 {
		t.Errorf("unknown model: %d, %v", got, err)
	}
	if _, err := p.Price("gpt-9"); err == nil || !strings.Contains(err.Error(), `no price for model "gpt-9"`) {
		t.Errorf("Price of an unknown model: %v", err)
	}
}

// A request's cost: each kind of token at its price, cache prices that
// are not known at the input price, the long-context tier for a prompt
// beyond it, rounded up once.
func TestPriceOf(t *testing.T) {
	t.Parallel()
	sonnet := Price{InputMicrosPerMTok: 3_000_000, CacheWriteMicrosPerMTok: 3_750_000, CacheWrite1hMicrosPerMTok: 6_000_000,
		CacheReadMicrosPerMTok: 300_000, OutputMicrosPerMTok: 15_000_000}
	bare := Price{InputMicrosPerMTok: 2_000_000, OutputMicrosPerMTok: 8_000_000}
	tiered := Price{InputMicrosPerMTok: 1_000_000, OutputMicrosPerMTok: 5_000_000, LongAbove: 100,
		Long: &Price{InputMicrosPerMTok: 5_000_000, OutputMicrosPerMTok: 25_000_000}}
	for _, tt := range []struct {
		name  string
		price Price
		u     Usage
		want  int64
	}{
		{"input and output", sonnet, Usage{Input: 1_000_000, Output: 1_000_000}, 18_000_000},
		{"cache writes and reads", sonnet, Usage{CacheWrite: 1_000_000, CacheWrite1h: 1_000_000, CacheRead: 1_000_000}, 10_050_000},
		// A Claude Code turn: 3 fresh tokens, 4,000 written, 20,000 read, 300 out.
		{"a turn", sonnet, Usage{Input: 3, CacheWrite: 4000, CacheRead: 20000, Output: 300}, 9 + 15000 + 6000 + 4500},
		{"unknown cache prices are the input price", bare, Usage{CacheWrite: 500_000, CacheWrite1h: 500_000, CacheRead: 1_000_000}, 4_000_000},
		{"a 1-hour write without a price of its own", Price{InputMicrosPerMTok: 1, CacheWriteMicrosPerMTok: 7_000_000}, Usage{CacheWrite1h: 1_000_000}, 7_000_000},
		{"rounded up once", sonnet, Usage{Input: 1, CacheRead: 1}, 4},
		{"at the tier's edge", tiered, Usage{Input: 60, CacheRead: 40, Output: 10}, 60 + 40 + 50},
		{"beyond it", tiered, Usage{Input: 60, CacheRead: 41, Output: 10}, 300 + 205 + 250},
		{"well beyond it", tiered, Usage{Input: 1_000_000, Output: 1_000_000}, 30_000_000},
		{"nothing", sonnet, Usage{}, 0},
	} {
		if got, err := tt.price.Of(tt.u); err != nil || got != tt.want {
			t.Errorf("%s: %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	if _, err := sonnet.Of(Usage{CacheRead: -1}); err == nil {
		t.Error("a negative count was priced")
	}
	if _, err := sonnet.Of(Usage{Output: 1 << 62, Input: 1 << 62}); err == nil {
		t.Error("an overflow was priced")
	}
}

// The table finds a model by the name an API or a transcript gives it.
func TestLookupNames(t *testing.T) {
	t.Parallel()
	p := Default()
	for _, tt := range []struct{ model, entry string }{
		{"claude-opus-4-5", "claude-opus-4-5"},
		{"claude-opus-4-5-20251101", "claude-opus-4-5"},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5"},
		{"anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},
		{"Claude-Sonnet-5-5", "claude-sonnet-5-5"},
		{"gpt-5.4-2026-03-05", "gpt-5.4"},
		{"openai/gpt-6-sol", "gpt-6-sol"},
		{"models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"google/gemini-3.8-flash", "gemini-3.8-flash"},
		{"", "default"},
	} {
		if _, name, known := p.Lookup(tt.model); !known || name != tt.entry {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.model, name, known, tt.entry)
		}
	}
	for _, model := range []string{"<synthetic>", "gpt-9", "claude-opus-9", "sonnet"} {
		if price, name, known := p.Lookup(model); known || name != DefaultModel || price != p.Models[DefaultModel] {
			t.Errorf("Lookup(%q) = %q, %v", model, name, known)
		}
	}
}

// The built-in table covers the three providers, and every price in it
// is sound: output dearer than input, a cache hit cheaper, a long tier
// dearer than the base.
func TestBuiltinTable(t *testing.T) {
	t.Parallel()
	b := Builtin()
	for _, prefix := range []string{"claude-", "gpt-", "gemini-"} {
		n := 0
		for name := range b {
			if strings.HasPrefix(name, prefix) {
				n++
			}
		}
		if n < 5 {
			t.Errorf("%d models of %s*", n, prefix)
		}
	}
	var check func(name string, p Price)
	check = func(name string, p Price) {
		if p.InputMicrosPerMTok <= 0 || p.OutputMicrosPerMTok <= p.InputMicrosPerMTok || p.CacheReadMicrosPerMTok >= p.InputMicrosPerMTok ||
			(p.CacheWriteMicrosPerMTok != 0 && p.CacheWriteMicrosPerMTok < p.InputMicrosPerMTok) || p.CacheWrite1hMicrosPerMTok != 0 && p.CacheWrite1hMicrosPerMTok < p.CacheWriteMicrosPerMTok {
			t.Errorf("%s: %+v", name, p)
		}
		if Normalize(name) != name {
			t.Errorf("%s is not a normal name (%s)", name, Normalize(name))
		}
		if p.Long != nil {
			if p.LongAbove <= 0 || p.Long.InputMicrosPerMTok <= p.InputMicrosPerMTok || p.Long.OutputMicrosPerMTok <= p.OutputMicrosPerMTok {
				t.Errorf("%s: long tier %+v", name, p.Long)
			}
			check(name, *p.Long)
		}
	}
	for name, p := range b {
		check(name, p)
	}
	if TableDate == "" {
		t.Error("the table is not dated")
	}
}

// A default model named as an API names it (dated) prices unknown models.
func TestDefaultModelByItsDatedName(t *testing.T) {
	t.Parallel()
	p := Default()
	p.DefaultModel = "claude-sonnet-4-5-20250929"
	price, name, known := p.Lookup("gpt-9")
	if known || name != "claude-sonnet-4-5" || price != p.Models["claude-sonnet-4-5"] {
		t.Errorf("%+v %q %v", price, name, known)
	}
	if _, err := p.Price(""); err != nil {
		t.Error(err)
	}
}
