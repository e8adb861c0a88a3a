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
	if _, err := p.Cost("gpt-9", 1, 1); err == nil || !strings.Contains(err.Error(), "priced models: cheap, default") {
		t.Errorf("unknown model: %v", err)
	}
}
