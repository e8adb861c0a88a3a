// Package pricing is the price table: what a model's input and output tokens
// cost, in integer micro-dollars, and the exact cost of a call. It is data
// and arithmetic only; the configuration fills the table and the governor
// charges with it.
package pricing

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// Price is what a model costs, in micro-dollars per million tokens (that is,
// dollars per million tokens × 10⁶; equivalently pico-dollars per token).
type Price struct {
	InputMicrosPerMTok  int64 `json:"input_micros_per_mtok"`
	OutputMicrosPerMTok int64 `json:"output_micros_per_mtok"`
}

// Prices is the price table of the configuration.
type Prices struct {
	DefaultModel string
	Models       map[string]Price
}

// DefaultModel is the name of the built-in price, used when the
// configuration names none: $2.50 per million input tokens and $10.00 per
// million output tokens (what the reference harness charges for a model it
// does not know).
const DefaultModel = "default"

// Default is the price table without configuration.
func Default() Prices {
	return Prices{
		DefaultModel: DefaultModel,
		Models:       map[string]Price{DefaultModel: {InputMicrosPerMTok: 2_500_000, OutputMicrosPerMTok: 10_000_000}},
	}
}

// Price returns the price of model ("" for the default model).
func (p Prices) Price(model string) (Price, error) {
	if model == "" {
		model = p.DefaultModel
	}
	price, ok := p.Models[model]
	if !ok {
		names := slices.Sorted(maps.Keys(p.Models))
		return Price{}, fmt.Errorf("no price for model %q; priced models: %s", model, strings.Join(names, ", "))
	}
	return price, nil
}

// Cost is the cost in micro-dollars of a call with in input and out output
// tokens at model's price, rounded up to a whole micro-dollar (a budget
// never undercounts). The arithmetic is exact: 128-bit intermediates.
func (p Prices) Cost(model string, in, out int64) (int64, error) {
	price, err := p.Price(model)
	if err != nil {
		return 0, err
	}
	if in < 0 || out < 0 {
		return 0, fmt.Errorf("negative token count (%d in, %d out)", in, out)
	}
	hiA, loA := bits.Mul64(uint64(in), uint64(price.InputMicrosPerMTok))
	hiB, loB := bits.Mul64(uint64(out), uint64(price.OutputMicrosPerMTok))
	lo, carry := bits.Add64(loA, loB, 0)
	hi, _ := bits.Add64(hiA, hiB, carry)
	lo, carry = bits.Add64(lo, 1_000_000-1, 0) // round up
	hi += carry
	if hi >= 1_000_000 {
		return 0, fmt.Errorf("cost of %d+%d tokens overflows", in, out)
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > 1<<62 {
		return 0, fmt.Errorf("cost of %d+%d tokens overflows", in, out)
	}
	return int64(q), nil
}
