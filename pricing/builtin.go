package pricing

// TableDate is the date of the built-in price table: the providers'
// published list prices (standard tier, USD) as read then. Prices change;
// [cost.models.NAME] in harness.toml replaces a model's.
const TableDate = "2026-12-01"

// usd is dollars per million tokens in micro-dollars per million tokens.
func usd(dollars float64) int64 { return int64(dollars*1_000_000 + 0.5) }

// anthropic is an Anthropic price: base input, 5-minute and 1-hour cache
// writes, cache hits, output.
func anthropic(in, write5m, write1h, read, out float64) Price {
	return Price{InputMicrosPerMTok: usd(in), CacheWriteMicrosPerMTok: usd(write5m), CacheWrite1hMicrosPerMTok: usd(write1h),
		CacheReadMicrosPerMTok: usd(read), OutputMicrosPerMTok: usd(out)}
}

// flat is an OpenAI or Google price: input, cache writes (0 where the
// provider charges none: written at the input price), cached input,
// output.
func flat(in, write, read, out float64) Price {
	return Price{InputMicrosPerMTok: usd(in), CacheWriteMicrosPerMTok: usd(write), CacheReadMicrosPerMTok: usd(read), OutputMicrosPerMTok: usd(out)}
}

// long gives p a long-context tier: prompts above above tokens billed at l.
func long(p Price, above int64, l Price) Price {
	p.LongAbove, p.Long = above, &l
	return p
}

// openAILong is OpenAI's long-context tier of the GPT-5.6 and GPT-6
// models: above 272K input tokens, input and cache prices double and
// output costs 1.5 times as much.
func openAILong(p Price) Price {
	l := Price{InputMicrosPerMTok: 2 * p.InputMicrosPerMTok, CacheWriteMicrosPerMTok: 2 * p.CacheWriteMicrosPerMTok,
		CacheReadMicrosPerMTok: 2 * p.CacheReadMicrosPerMTok, OutputMicrosPerMTok: p.OutputMicrosPerMTok * 3 / 2}
	return long(p, 272_000, l)
}

// Builtin is the built-in price table (TableDate), by the models' API
// names; Lookup finds a dated or prefixed name (claude-opus-4-5-20251101,
// anthropic.claude-haiku-4-5-20251001-v1:0, gpt-5.4-2026-03-05) by its
// base name. Sources:
//
//   - Anthropic: platform.claude.com/docs/en/about-claude/pricing and the
//     models' overview pages (base input, 5-minute and 1-hour cache
//     writes, cache hits, output). Claude Haiku 5.5's prompts above 100K
//     tokens are billed at its long-context rates.
//   - OpenAI: developers.openai.com/api/docs/pricing and the models'
//     pages (input, cache writes, cached input, output); the GPT-5.6 and
//     GPT-6 models bill prompts above 272K tokens at twice the input and
//     cache prices and 1.5 times the output price.
//   - Google: ai.google.dev/gemini-api/docs/pricing (input, context cache
//     reads where the page gives them, output; prompts above 200K tokens
//     at the Pro models' long rates). Gemini 3.8 Flash is at its standard
//     rate, which follows its introductory one on 2027-01-01; cache
//     storage (per hour) is not a token price and is not charged.
//
// Where a provider publishes no cache price for a model, its cached
// tokens are charged at the input price (Price.Of). Claude Haiku 5.5's
// cache writes are its input price times Anthropic's multipliers (1.25
// for 5 minutes, 2 for an hour).
func Builtin() map[string]Price {
	opus45 := anthropic(5, 6.25, 10, 0.50, 25)
	opus4 := anthropic(15, 18.75, 30, 1.50, 75)
	sonnet5 := anthropic(2, 2.50, 4, 0.20, 10)
	sonnet4 := anthropic(3, 3.75, 6, 0.30, 15)
	return map[string]Price{
		// Anthropic
		"claude-fable-5-1":  anthropic(10, 12.50, 20, 0.25, 50),
		"claude-opus-5-5":   anthropic(4, 5, 8, 0.20, 20),
		"claude-opus-5":     opus45,
		"claude-opus-4-8":   opus45,
		"claude-opus-4-7":   opus45,
		"claude-opus-4-6":   opus45,
		"claude-opus-4-5":   opus45,
		"claude-opus-4-1":   opus4,
		"claude-opus-4":     opus4,
		"claude-opus-4-0":   opus4,
		"claude-sonnet-5-5": sonnet5,
		"claude-sonnet-5":   sonnet5,
		"claude-sonnet-4-6": sonnet4,
		"claude-sonnet-4-5": sonnet4,
		"claude-sonnet-4":   sonnet4,
		"claude-sonnet-4-0": sonnet4,
		"claude-haiku-5-5":  long(anthropic(0.10, 0.125, 0.20, 0.01, 0.50), 100_000, anthropic(0.50, 0.625, 1, 0.05, 2.50)),
		"claude-haiku-4-5":  anthropic(1, 1.25, 2, 0.10, 5),
		"claude-3-5-haiku":  anthropic(0.80, 1, 1.6, 0.08, 4),

		// OpenAI
		"gpt-6-sol":     openAILong(flat(2, 2.50, 0.20, 10)),
		"gpt-6.1-sol":   openAILong(flat(2, 2.50, 0.10, 10)),
		"gpt-6.1-terra": openAILong(flat(1, 1.25, 0.05, 5)),
		"gpt-6-luna":    openAILong(flat(0.10, 0.125, 0.01, 0.50)),
		"gpt-5.6-sol":   openAILong(flat(5, 0, 0.50, 30)),
		"gpt-5.6":       openAILong(flat(5, 0, 0.50, 30)), // the alias of gpt-5.6-sol
		"gpt-5.6-terra": openAILong(flat(2, 0, 0.20, 12)),
		"gpt-5.6-luna":  openAILong(flat(0.20, 0, 0.02, 1.20)),
		"gpt-5.5":       flat(5, 0, 0.50, 30),
		"gpt-5.4":       flat(2.50, 0, 0.25, 15),
		"gpt-5.4-mini":  flat(0.75, 0, 0.075, 4.50),
		"gpt-5.4-nano":  flat(0.20, 0, 0.02, 1.25),

		// Google
		"gemini-3.8-flash":       flat(1.50, 0, 0.15, 7.50),
		"gemini-3.5-flash":       flat(1.50, 0, 0, 9),
		"gemini-3.5-flash-lite":  flat(0.30, 0, 0, 2.50),
		"gemini-3.1-pro-preview": long(flat(2, 0, 0, 12), 200_000, flat(4, 0, 0, 18)),
		"gemini-2.5-pro":         long(flat(1.25, 0, 0.125, 10), 200_000, flat(2.50, 0, 0.25, 15)),
		"gemini-2.5-flash":       flat(0.30, 0, 0.03, 2.50),
		"gemini-2.5-flash-lite":  flat(0.10, 0, 0.01, 0.40),
	}
}
