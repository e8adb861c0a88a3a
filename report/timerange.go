package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Range works out a report's range from what a command was given: since
// (a duration back from now: "24h", "90m", or days, "7d"), or from and to
// (RFC 3339 times, or dates "2026-12-01" meaning their UTC midnight); any
// may be empty. since and from together are an error.
func Range(since, from, to string, now time.Time) (time.Time, time.Time, error) {
	var f, t time.Time
	var err error
	if since != "" && from != "" {
		return f, t, errors.New("--since and --from: give one of them")
	}
	if since != "" {
		d, err := parseSince(since)
		if err != nil {
			return f, t, err
		}
		f = now.Add(-d)
	}
	if from != "" {
		if f, err = parseTime(from); err != nil {
			return f, t, fmt.Errorf("--from: %w", err)
		}
	}
	if to != "" {
		if t, err = parseTime(to); err != nil {
			return f, t, fmt.Errorf("--to: %w", err)
		}
	}
	if !f.IsZero() && !t.IsZero() && !f.Before(t) {
		return f, t, fmt.Errorf("the range ends (%s) before it starts (%s)", t.Format(time.RFC3339), f.Format(time.RFC3339))
	}
	return f, t, nil
}

func parseSince(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--since %q: want a duration such as 24h, 90m or 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q: want a duration such as 24h, 90m or 7d", s)
	}
	return d, nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want a time such as 2026-12-01T09:00:00Z, or a date such as 2026-12-01 (UTC)", s)
}
