package strict

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQuote is the most of a file's text that an error message quotes: a
// value, a key or a token longer than this is cut short, and "…" says so.
// An error must point at the problem, not print the file again: the file
// may not be what its author meant it to be (a link to a credentials
// file), and the message reaches the agent and the operator's terminal.
const MaxQuote = 40

// maxWord is the longest run without spaces or quotes that Clip leaves
// whole: identifiers and references (data.harness.custom.x.deny) are
// often longer than a quoted value should be.
const maxWord = 2 * MaxQuote

// Quote quotes s as %q does, cut to MaxQuote bytes (never half a
// character) with "…" after the quotes when it was longer.
func Quote(s string) string {
	if len(s) <= MaxQuote {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, MaxQuote)) + "…"
}

// cut returns the first n bytes of s or fewer, ending at a character
// boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Clip cuts, in a message of a parser (BurntSushi/toml's, OPA's) that may
// quote the file, every quoted fragment longer than MaxQuote bytes and
// every unquoted word longer than 2×MaxQuote, marking each cut with "…".
// A fragment is what lies between double quotes or backquotes, or between
// single quotes that are not apostrophes; an unclosed quote is left alone.
func Clip(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		c := msg[i]
		if end := closing(msg, i); end > 0 {
			inner := msg[i+1 : end]
			b.WriteByte(c)
			if len(inner) > MaxQuote {
				kept := cut(inner, MaxQuote)
				if c == '"' {
					kept = strings.TrimSuffix(kept, `\`) // not half an escape
				}
				b.WriteString(kept)
				b.WriteString("…")
			} else {
				b.WriteString(inner)
			}
			b.WriteByte(c)
			i = end + 1
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' {
			b.WriteByte(c)
			i++
			continue
		}
		// A word: up to a space or a quote.
		j := i + 1
		for j < len(msg) && msg[j] != ' ' && msg[j] != '\t' && msg[j] != '\n' && closing(msg, j) < 0 {
			j++
		}
		word := msg[i:j]
		if len(word) > maxWord {
			b.WriteString(cut(word, maxWord))
			b.WriteString("…")
		} else {
			b.WriteString(word)
		}
		i = j
	}
	return b.String()
}

// closing returns the index of the quote that closes one opening at
// msg[i], or -1 when msg[i] opens no fragment.
func closing(msg string, i int) int {
	c := msg[i]
	switch c {
	case '"', '`':
	case '\'':
		// An apostrophe (can't) opens nothing.
		if i > 0 {
			if r, _ := utf8.DecodeLastRuneInString(msg[:i]); unicode.IsLetter(r) || unicode.IsDigit(r) {
				return -1
			}
		}
	default:
		return -1
	}
	for j := i + 1; j < len(msg); j++ {
		switch {
		case c == '"' && msg[j] == '\\':
			j++
		case msg[j] == c:
			if c == '\'' && j+1 < len(msg) {
				if r, _ := utf8.DecodeRuneInString(msg[j+1:]); unicode.IsLetter(r) || unicode.IsDigit(r) {
					continue // an apostrophe inside
				}
			}
			return j
		}
	}
	return -1
}
