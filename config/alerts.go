package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentharness/harness/internal/strict"
)

// alertKeys are the keys of one [[alerts]].
var alertKeys = []string{"name", "url", "events", "format", "headers", "queue", "timeout", "retry_for"}

var (
	alertName  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// setAlerts reads [[alerts]]: each a url and what to send it; each error at
// its alert's key (alerts.N.KEY). No error quotes a URL: some receivers'
// URLs are secrets, and a load error can reach an agent (the hook's
// refusal says why).
func (c *Config) setAlerts(doc *strict.Doc) strict.ErrorList {
	var errs strict.ErrorList
	list, ok := doc.Values["alerts"].([]map[string]any)
	if !ok {
		return strict.ErrorList{doc.Errorf("alerts", "alerts: %v", strict.WantType("an array of tables ([[alerts]])", doc.Values["alerts"]))}
	}
	names := map[string]bool{}
	for _, a := range c.Alerts {
		names[a.Name] = true
	}
	for i, t := range list {
		at := fmt.Sprintf("alerts[%d]", i+1)
		fail := func(key, format string, args ...any) {
			path := at
			if key != "" {
				path += "." + key
			}
			errs = append(errs, doc.Errorf(path, "%s: %s", path, fmt.Sprintf(format, args...)))
		}
		a := Alert{Name: fmt.Sprintf("alerts.%d", i+1)}
		bad := false
		for _, key := range strict.SortedKeys(t) {
			v := t[key]
			err := a.set(key, v)
			if err != nil {
				fail(key, "%v", err)
				bad = true
			}
		}
		switch {
		case bad:
		case a.URL == "":
			fail("", "url is missing: the webhook to POST the events to")
		case names[a.Name]:
			fail("name", "the name %s is used twice", strict.Quote(a.Name))
		default:
			names[a.Name] = true
			c.Alerts = append(c.Alerts, a)
		}
	}
	return errs
}

// set reads one key of an [[alerts]].
func (a *Alert) set(key string, v any) error {
	duration := func(lo, hi time.Duration, example string) (time.Duration, error) {
		s, ok := v.(string)
		if !ok {
			return 0, strict.WantType(fmt.Sprintf("a duration such as %q", example), v)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < lo || d > hi {
			return 0, fmt.Errorf("%s: want a duration from %v to %v, such as %q", strict.Quote(s), lo, hi, example)
		}
		return d, nil
	}
	var err error
	switch key {
	case "name":
		s, _ := v.(string)
		if !alertName.MatchString(s) {
			return fmt.Errorf("%s: want 1 to 64 of A-Z, a-z, 0-9, '_', '.' and '-'", strict.TypeName(v))
		}
		a.Name = s
	case "url":
		s, ok := v.(string)
		if !ok {
			return strict.WantType("a string", v)
		}
		u, perr := url.Parse(s)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http:// or https:// URL with a host (the value is not shown: a webhook's URL can be a secret)")
		}
		a.URL = s
	case "events":
		list, lerr := strings_(v)
		if lerr != nil {
			return lerr
		}
		if len(list) == 0 {
			return fmt.Errorf("want at least one of %s (leave events out for all)", strings.Join(AlertEvents, ", "))
		}
		for i, e := range list {
			if !slices.Contains(AlertEvents, e) {
				msg := fmt.Sprintf("item %d: %s is not an event type (want %s)", i+1, strict.Quote(e), strings.Join(AlertEvents, ", "))
				if s := strict.Suggest(e, AlertEvents); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return fmt.Errorf("%s", msg)
			}
			if !slices.Contains(a.Events, e) {
				a.Events = append(a.Events, e)
			}
		}
	case "format":
		switch v {
		case "json", "slack":
			a.Format = v.(string)
		default:
			return fmt.Errorf("%s: want \"json\" (the event) or \"slack\" ({\"text\": ...})", strict.TypeName(v))
		}
	case "headers":
		m, ok := v.(map[string]any)
		if !ok {
			return strict.WantType("a table of header = value", v)
		}
		a.Headers = map[string]string{}
		for _, k := range strict.SortedKeys(m) {
			s, ok := m[k].(string)
			switch {
			case !headerName.MatchString(k):
				return fmt.Errorf("%s is not a header name", strict.Quote(k))
			case !ok || strings.ContainsAny(s, "\r\n\x00"):
				return fmt.Errorf("%s: want a string of one line", k)
			}
			a.Headers[k] = s
		}
	case "queue":
		var n int64
		n, err = wholeNumber(v, 1, 100000)
		a.Queue = int(n)
	case "timeout":
		a.Timeout, err = duration(100*time.Millisecond, time.Minute, "5s")
	case "retry_for":
		a.RetryFor, err = duration(time.Second, 24*time.Hour, "10m")
	default:
		msg := fmt.Sprintf("unknown key %s (want %s)", strict.Quote(key), strings.Join(alertKeys, ", "))
		if s := strict.Suggest(key, alertKeys); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return fmt.Errorf("%s", msg)
	}
	return err
}
