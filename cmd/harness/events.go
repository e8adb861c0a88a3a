package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// events prints the harness events, or follows them.
func (c *cli) events(args []string) int {
	fs, project := c.flags("events")
	follow := fs.Bool("follow", false, "keep printing new events until interrupted")
	typ := fs.String("type", "", "only events of this `TYPE`: BudgetWarning, BudgetExhausted, PolicyViolation, RoleChanged")
	session := fs.String("session", "", "only this session's events")
	agent := fs.String("agent", "", "only this agent's events")
	asJSON := fs.Bool("json", false, "print the events as they are stored, one JSON object a line")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	if *typ != "" && !slices.Contains(events.Types, events.Type(*typ)) {
		return c.fail("events: unknown --type %q; want one of %v", *typ, events.Types)
	}
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	path := h.EventsPath()
	if path == "" {
		return c.fail("events: the events log is off ([log] events = \"off\")")
	}
	show := func(line []byte) error {
		var e events.Event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Fprintf(c.stderr, "harness: skipping a line that is not an event: %v\n", err)
			return nil
		}
		if (*typ != "" && string(e.Type) != *typ) || (*session != "" && e.Session != *session) || (*agent != "" && e.Agent != *agent) {
			return nil
		}
		if *asJSON {
			_, err := fmt.Fprintf(c.stdout, "%s\n", line)
			return err
		}
		_, err := fmt.Fprintln(c.stdout, formatEvent(e))
		return err
	}
	if *follow {
		if err := events.Follow(c.env.ctx, path, h.Config.LogMaxFiles, 200*time.Millisecond, show); err != nil {
			return c.fail("events: %v", err)
		}
		return exitOK
	}
	if err := events.ReadLines(path, h.Config.LogMaxFiles, show); err != nil {
		return c.fail("events: %v", err)
	}
	return exitOK
}

// formatEvent is one readable line for an event. Every string of it may
// come from the agent (a tool name, a message quoting its arguments, or a
// line it wrote into the file itself), so each is shown Printable: one
// event, one line.
func formatEvent(e events.Event) string {
	p := contract.Printable
	who := p(e.Session)
	if e.Agent != "" {
		who = p(e.Agent) + "/" + who
	}
	var what string
	switch {
	case e.Budget != nil && e.Percent != nil:
		what = fmt.Sprintf("role %s: %s %s/%s (%d%%)", p(e.Role), p(e.Dimension), amount(e.Dimension, e.Used), amount(e.Dimension, e.Limit), *e.Percent)
	case e.Budget != nil:
		what = fmt.Sprintf("role %s: %s %s/%s", p(e.Role), p(e.Dimension), amount(e.Dimension, e.Used), amount(e.Dimension, e.Limit))
	case e.Violation != nil:
		what = fmt.Sprintf("role %s, tool %s: %s", p(e.Role), p(e.Tool), p(e.Reason))
	case e.Switch != nil:
		what = fmt.Sprintf("%s → %s", p(e.From), p(e.To))
		if e.By != "" {
			what += " (by " + p(e.By) + ")"
		}
	}
	if e.Shadow {
		what += " [shadow: not enforced]"
	}
	return fmt.Sprintf("%s  %-16s %s  %s", e.Time.Format(time.RFC3339), p(string(e.Type)), who, what)
}

func amount(dim string, n int64) string {
	if dim == "cost" {
		return contract.FormatUSD(n)
	}
	return fmt.Sprint(n)
}

// log finds decisions in the decision log.
func (c *cli) log(args []string) int {
	fs, project := c.flags("log")
	id := fs.String("decision", "", "print the decision with this `ID` in full")
	session := fs.String("session", "", "only this session's decisions")
	limit := fs.Int("limit", 20, "print at most the last `N` decisions (0: all)")
	asJSON := fs.Bool("json", false, "print entries as they are stored, one JSON object a line")
	if !c.parseNone(fs, args, "") {
		return exitError
	}
	h, ok := c.load(c.params(*project))
	if !ok {
		return exitError
	}
	path := h.DecisionsPath()
	if path == "" {
		return c.fail("log: the decision log is off ([log] decisions = \"off\")")
	}
	type entry struct {
		events.Entry
		in  contract.Input
		out contract.Decision
		sw  contract.SwitchDecision
		ch  events.ChargeResult
		raw []byte
	}
	var found []entry
	err := events.ReadLines(path, h.Config.LogMaxFiles, func(line []byte) error {
		var e entry
		if json.Unmarshal(line, &e.Entry) != nil || json.Unmarshal(e.Input, &e.in) != nil {
			return nil
		}
		result := any(&e.out)
		switch e.Path {
		case events.PathSwitch:
			result = &e.sw
		case events.PathCharge:
			result = &e.ch
		}
		if json.Unmarshal(e.Result, result) != nil {
			return nil
		}
		if (*id != "" && e.DecisionID != *id) || (*session != "" && e.in.Session != *session) {
			return nil
		}
		e.raw = bytes.Clone(line)
		found = append(found, e)
		return nil
	})
	if err != nil {
		return c.fail("log: %v", err)
	}
	if *id != "" {
		if len(found) == 0 {
			return c.fail("log: no decision %s in %s (or its rotated files)", *id, path)
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, found[0].raw, "", "  ")
		fmt.Fprintln(c.stdout, printableJSON(pretty.String()))
		return exitOK
	}
	if *limit > 0 && len(found) > *limit {
		found = found[len(found)-*limit:]
	}
	for _, e := range found {
		if *asJSON {
			fmt.Fprintf(c.stdout, "%s\n", e.raw)
			continue
		}
		// Every string may come from the agent: shown Printable, one
		// decision a line.
		p := contract.Printable
		var codes []string
		for _, r := range append(e.out.Reasons, e.out.Warnings...) {
			codes = append(codes, r.Code)
		}
		for _, r := range e.sw.Reasons {
			codes = append(codes, r.Code+"("+r.Rule+")")
		}
		who := p(e.in.Session)
		if e.in.Agent != "" {
			who = p(e.in.Agent) + "/" + who
		}
		shadow := ""
		if e.Shadow {
			shadow = " [shadow]"
		}
		what := fmt.Sprintf("%s %s → %s%s", p(e.out.Role), p(e.out.Tool), p(e.out.Decision), shadow)
		switch e.Path {
		case events.PathCharge:
			what = fmt.Sprintf("%s %s charged: tokens +%d, shell %+d, cost +%s", p(e.in.Role), p(e.in.Tool), e.ch.Tokens, e.ch.Shell, contract.FormatUSD(e.ch.CostMicros))
			if e.ch.Withheld > 0 {
				what += fmt.Sprintf(" (%d tokens withheld)", e.ch.Withheld)
			}
		case events.PathSwitch:
			verdict := "switched"
			if !e.sw.Allowed {
				verdict = "refused"
			}
			what = fmt.Sprintf("switch %s → %s by %s: %s", p(e.sw.From), p(e.sw.To), p(e.sw.By), verdict)
		}
		fmt.Fprintf(c.stdout, "%s  %s  %s  %s %s\n", e.Timestamp.Format(time.RFC3339), p(e.DecisionID), who, what, p(strings.Join(codes, ",")))
	}
	return exitOK
}

// printableJSON returns JSON text with every character a terminal would
// not print plainly (within strings: those JSON lets through raw, such as
// C1 controls, line separators and bidirectional overrides) written as a
// \u escape: the same JSON, shown safely.
func printableJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
	}
	return b.String()
}
