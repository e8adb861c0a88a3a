package contract

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// StatusLine is the budget summary of section 5 of the contract:
//
//	Budget[coder]: tokens 50000/200000 (25%) | shell 5/100 (5%) | cost $0.50/$5.00 (10%) → OK
//
// with, when the agent has a budget across its sessions (section 8), a
// second segment of the dimensions it bounds:
//
//	… → OK | Agent[claude-code, day]: tokens 1200000/5000000 (24%) | cost $3.10/$20.00 (15%) → OK
func (s Status) StatusLine() string {
	b := s.Budget
	line := fmt.Sprintf("Budget[%s]: tokens %d/%d (%d%%) | shell %d/%d (%d%%) | cost %s/%s (%d%%) → %s",
		Printable(s.Role),
		b.Tokens.Used, b.Tokens.Limit, b.Tokens.Percent,
		b.Shell.Used, b.Shell.Limit, b.Shell.Percent,
		FormatUSD(b.Cost.Used), FormatUSD(b.Cost.Limit), b.Cost.Percent,
		Printable(s.Signal))
	if a := s.AgentBudget; a != nil {
		var parts []string
		if d := a.Tokens; d != nil {
			parts = append(parts, fmt.Sprintf("tokens %d/%d (%d%%)", d.Used, d.Limit, d.Percent))
		}
		if d := a.Shell; d != nil {
			parts = append(parts, fmt.Sprintf("shell %d/%d (%d%%)", d.Used, d.Limit, d.Percent))
		}
		if d := a.Cost; d != nil {
			parts = append(parts, fmt.Sprintf("cost %s/%s (%d%%)", FormatUSD(d.Used), FormatUSD(d.Limit), d.Percent))
		}
		line += fmt.Sprintf(" | Agent[%s, %s]: %s → %s", Printable(a.Agent), Printable(a.Period), strings.Join(parts, " | "), Printable(a.Signal))
	}
	return line
}

// Printable returns s as a terminal may show it: every character that is
// not printable (control characters, among them the ESC of ANSI escapes
// and the newline; line separators; bidirectional overrides) and every
// byte that is not UTF-8 written as Go writes it in a quoted string (\n,
// \x1b, \u202e, \xff), so that a tool name or a message cannot forge a
// line or drive the terminal. Printable characters, backslashes included,
// are left as they are.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// FormatUSD prints micro-dollars as dollars with two decimals, rounded down
// (usage is never overstated): 4_999_999 → "$4.99".
func FormatUSD(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	return fmt.Sprintf("%s$%d.%02d", sign, micros/1_000_000, micros/10_000%100)
}

// ParseUSD reads a dollar amount ("0.5", "$5", "12.345678") exactly, as
// micro-dollars. More than six decimals, a sign, or anything but digits and
// one dot is an error.
func ParseUSD(s string) (int64, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "$")
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 12 {
		return 0, fmt.Errorf("invalid dollar amount %q: want digits with at most 6 decimals, like 0.50", s)
	}
	var n int64
	for _, c := range whole + frac + strings.Repeat("0", 6-len(frac)) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid dollar amount %q: want digits with at most 6 decimals, like 0.50", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}
