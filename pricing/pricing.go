// Package pricing is the price table: what a model's input, output and
// cached tokens cost, in integer micro-dollars, and the exact cost of a call
// or of a model request. It is data and arithmetic only; the configuration
// fills the table (over the built-in one, see Builtin) and the governor
// charges with it.
package pricing

import (
	"fmt"
	"math/bits"
	"regexp"
	"strings"
)

// Price is what a model costs, in micro-dollars per million tokens (that is,
// dollars per million tokens × 10⁶; equivalently pico-dollars per token).
// A cache price of 0 is not known: those tokens are charged at the input
// price (a budget never undercounts).
type Price struct {
	InputMicrosPerMTok  int64 `json:"input_micros_per_mtok"`
	OutputMicrosPerMTok int64 `json:"output_micros_per_mtok"`
	// CacheWriteMicrosPerMTok is the price of writing the prompt cache:
	// Anthropic's 5-minute cache writes, OpenAI's cache writes.
	CacheWriteMicrosPerMTok int64 `json:"cache_write_micros_per_mtok,omitempty"`
	// CacheWrite1hMicrosPerMTok is Anthropic's 1-hour cache writes (0:
	// CacheWriteMicrosPerMTok).
	CacheWrite1hMicrosPerMTok int64 `json:"cache_write_1h_micros_per_mtok,omitempty"`
	// CacheReadMicrosPerMTok is the price of cache hits (cached input).
	CacheReadMicrosPerMTok int64 `json:"cache_read_micros_per_mtok,omitempty"`
	// LongAbove and Long are a long-context tier: a request whose prompt
	// (input, cache writes and cache reads together) is above LongAbove
	// tokens is billed at Long throughout. Nil for none.
	LongAbove int64  `json:"long_above_tokens,omitempty"`
	Long      *Price `json:"long,omitempty"`
}

// Prices is the price table of the configuration.
type Prices struct {
	DefaultModel string
	Models       map[string]Price
}

// DefaultModel is the name of the built-in default price, used for a
// model the table does not know and when the configuration names no
// default: $2.50 per million input tokens and $10.00 per million output
// tokens (what the reference harness charges for a model it does not
// know).
const DefaultModel = "default"

// Default is the price table without configuration: the built-in prices
// (Builtin) and the default price.
func Default() Prices {
	models := Builtin()
	models[DefaultModel] = Price{InputMicrosPerMTok: 2_500_000, OutputMicrosPerMTok: 10_000_000}
	return Prices{DefaultModel: DefaultModel, Models: models}
}

// Lookup is the price of model ("" for the default model): the table's
// entry for its name, or for its name without a provider's prefix or a
// date or version suffix (anthropic.claude-opus-4-5-20251101-v1:0 is
// claude-opus-4-5); known is false when there is none, and the default
// model's price is returned. name is the entry's name.
func (p Prices) Lookup(model string) (price Price, name string, known bool) {
	if model == "" {
		model = p.DefaultModel
	}
	if price, name, ok := p.find(model); ok {
		return price, name, true
	}
	price, name, _ = p.find(p.DefaultModel)
	return price, name, false
}

// find is the entry of model, by its name or its normal name.
func (p Prices) find(model string) (Price, string, bool) {
	if price, ok := p.Models[model]; ok {
		return price, model, true
	}
	n := Normalize(model)
	price, ok := p.Models[n]
	return price, n, ok
}

// Price returns the price of model ("" for the default model); an error
// when the table has no entry for it.
func (p Prices) Price(model string) (Price, error) {
	if model == "" {
		model = p.DefaultModel
	}
	price, _, known := p.Lookup(model)
	if !known {
		return Price{}, fmt.Errorf("no price for model %q", model)
	}
	return price, nil
}

var (
	providerPrefix = regexp.MustCompile(`^(?:[a-z]+[./])+`)
	versionSuffix  = regexp.MustCompile(`(?:@.*|-v\d+(?::\d+)?|-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$`)
)

// Normalize is a model's name as the table names it: lower case, without
// a provider's prefix (anthropic., openai/, google/, models/), a version or
// date suffix (-20251101, -2026-04-01, @20251101, -v1:0, -latest).
func Normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	m = providerPrefix.ReplaceAllString(m, "")
	for {
		n := versionSuffix.ReplaceAllString(m, "")
		if n == m {
			return m
		}
		m = n
	}
}

// Usage is what one model request used, in tokens of each kind, as
// providers bill them: Input is the input not read from or written to the
// cache.
type Usage struct {
	Input, Output int64
	// CacheWrite are the tokens written to the cache (Anthropic: for 5
	// minutes), CacheWrite1h those written for an hour.
	CacheWrite, CacheWrite1h int64
	// CacheRead are the tokens read from the cache.
	CacheRead int64
}

// Prompt is the size of the request's prompt: input, cache writes and
// cache reads.
func (u Usage) Prompt() int64 { return u.Input + u.CacheWrite + u.CacheWrite1h + u.CacheRead }

// Of is the cost in micro-dollars of usage u at price p (its long-context
// tier when u's prompt is beyond it), rounded up to a whole micro-dollar
// (a budget never undercounts). The arithmetic is exact: 128-bit
// intermediates.
func (p Price) Of(u Usage) (int64, error) {
	if p.Long != nil && u.Prompt() > p.LongAbove {
		p = *p.Long
	}
	for _, n := range []int64{u.Input, u.Output, u.CacheWrite, u.CacheWrite1h, u.CacheRead} {
		if n < 0 {
			return 0, fmt.Errorf("negative token count in %+v", u)
		}
	}
	or := func(price, fallback int64) int64 {
		if price == 0 {
			return fallback
		}
		return price
	}
	write := or(p.CacheWriteMicrosPerMTok, p.InputMicrosPerMTok)
	terms := [][2]int64{
		{u.Input, p.InputMicrosPerMTok},
		{u.Output, p.OutputMicrosPerMTok},
		{u.CacheWrite, write},
		{u.CacheWrite1h, or(p.CacheWrite1hMicrosPerMTok, write)},
		{u.CacheRead, or(p.CacheReadMicrosPerMTok, p.InputMicrosPerMTok)},
	}
	var hi, lo uint64
	for _, t := range terms {
		h, l := bits.Mul64(uint64(t[0]), uint64(t[1]))
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi, carry = bits.Add64(hi, h, carry)
		if carry != 0 {
			return 0, fmt.Errorf("cost of %+v overflows", u)
		}
	}
	lo, carry := bits.Add64(lo, 1_000_000-1, 0) // round up
	hi += carry
	if hi >= 1_000_000 {
		return 0, fmt.Errorf("cost of %+v overflows", u)
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > 1<<62 {
		return 0, fmt.Errorf("cost of %+v overflows", u)
	}
	return int64(q), nil
}

// Cost is the cost in micro-dollars of a call with in input and out output
// tokens at model's price (the default model's when the table does not
// know it), rounded up to a whole micro-dollar.
func (p Prices) Cost(model string, in, out int64) (int64, error) {
	price, _, _ := p.Lookup(model)
	return price.Of(Usage{Input: in, Output: out})
}
