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

	"github.com/spf13/cobra"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

func (c *cli) eventsCmd() *cobra.Command {
	var f struct {
		follow, json        bool
		typ, session, agent string
	}
	cmd := &cobra.Command{
		Use:   "events [flags]",
		Short: "Print the harness events, or follow them",
		Long: `Events prints the harness events of the events log (budget warnings and
exhaustions, policy violations, role changes, resets), one a line, readable or as
stored (--json); --follow keeps printing new ones, across log rotations, until
interrupted. What may come from the agent is shown with control characters escaped.`,
		Example: `  harness events --type BudgetWarning
  harness events --follow --session s-1 --json`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int {
			return c.events(f.follow, f.json, f.typ, f.session, f.agent)
		}),
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.follow, "follow", false, "keep printing new events until interrupted")
	fs.StringVar(&f.typ, "type", "", "only events of this `TYPE`: "+typeList())
	fs.StringVar(&f.session, "session", "", "only this session's events (an `ID`)")
	fs.StringVar(&f.agent, "agent", "", "only this `AGENT`'s events")
	fs.BoolVar(&f.json, "json", false, "print the events as they are stored, one JSON object a line")
	cmd.RegisterFlagCompletionFunc("type", completeWords(typeNames()...))
	return cmd
}

func typeNames() []string {
	var names []string
	for _, t := range events.Types {
		names = append(names, string(t))
	}
	return names
}

func typeList() string { return strings.Join(typeNames(), ", ") }

// events prints the harness events, or follows them.
func (c *cli) events(follow, asJSON bool, typ, session, agent string) int {
	if typ != "" && !slices.Contains(events.Types, events.Type(typ)) {
		return c.fail("events: unknown --type %q; want one of %s", typ, typeList())
	}
	h, ok := c.load(c.params())
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
		if (typ != "" && string(e.Type) != typ) || (session != "" && e.Session != session) || (agent != "" && e.Agent != agent) {
			return nil
		}
		if asJSON {
			_, err := fmt.Fprintf(c.stdout, "%s\n", storedJSON(line))
			return err
		}
		_, err := fmt.Fprintln(c.stdout, formatEvent(e))
		return err
	}
	if follow {
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
	if e.Agent != "" && e.Session != "" {
		who = p(e.Agent) + "/" + who
	} else if e.Agent != "" {
		who = p(e.Agent)
	}
	var what string
	switch {
	case e.Reset != nil:
		what = "usage of the " + resetWhat(e.Reset.Scope, e.Reset.Period) + " reset by the " + p(e.Reset.By)
		if e.Role != "" {
			what += " (role " + p(e.Role) + ")"
		}
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

// resetWhat names what a reset of scope (and period) reset: "session", or
// "agent in day:2026-12-01".
func resetWhat(scope, period string) string {
	what := contract.Printable(scope)
	if period != "" {
		what += " in " + contract.Printable(period)
	}
	return what
}

func amount(dim string, n int64) string {
	if dim == "cost" {
		return contract.FormatUSD(n)
	}
	return fmt.Sprint(n)
}

func (c *cli) logCmd() *cobra.Command {
	var f struct {
		id, session string
		limit       int
		json        bool
	}
	cmd := &cobra.Command{
		Use:   "log [flags]",
		Short: "List decisions from the decision log, or print one",
		Long: `Log lists the decisions of the decision log (tool calls, role switches, resets),
the latest last, one a line; --decision prints one entry in full, as JSON.`,
		Example: `  harness log --session s-1 --limit 5
  harness log --decision 01a2b3c4-…`,
		Args: noArgs(""),
		RunE: c.runs(func(cmd *cobra.Command, _ []string) int { return c.log(f.id, f.session, f.limit, f.json) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.id, "decision", "", "print the decision with this `ID` in full")
	fs.StringVar(&f.session, "session", "", "only this session's decisions (an `ID`)")
	fs.IntVar(&f.limit, "limit", 20, "print at most the last `N` decisions (0: all)")
	fs.BoolVar(&f.json, "json", false, "print entries as they are stored, one JSON object a line")
	return cmd
}

// log finds decisions in the decision log.
func (c *cli) log(id, session string, limit int, asJSON bool) int {
	if limit < 0 {
		return c.fail("log: --limit %d: want a whole number >= 0 (0: all)", limit)
	}
	h, ok := c.load(c.params())
	if !ok {
		return exitError
	}
	path := h.DecisionsPath()
	if path == "" {
		return c.fail("log: the decision log is off ([log] decisions = \"off\")")
	}
	type entry struct {
		events.Entry
		in    contract.Input
		out   contract.Decision
		sw    contract.SwitchDecision
		ch    events.ChargeResult
		reset contract.ResetInput
		raw   []byte
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
		case "harness/reset":
			result = &contract.ResetResult{}
			if json.Unmarshal(e.Input, &e.reset) != nil {
				return nil
			}
		}
		if json.Unmarshal(e.Result, result) != nil {
			return nil
		}
		if (id != "" && e.DecisionID != id) || (session != "" && e.in.Session != session) {
			return nil
		}
		e.raw = bytes.Clone(line)
		found = append(found, e)
		return nil
	})
	if err != nil {
		return c.fail("log: %v", err)
	}
	if id != "" {
		if len(found) == 0 {
			return c.fail("log: no decision %s in %s (or its rotated files)", id, path)
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, found[0].raw, "", "  ")
		fmt.Fprintln(c.stdout, printableJSON(pretty.String()))
		return exitOK
	}
	if limit > 0 && len(found) > limit {
		found = found[len(found)-limit:]
	}
	for _, e := range found {
		if asJSON {
			fmt.Fprintf(c.stdout, "%s\n", storedJSON(e.raw))
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
		if e.in.Agent != "" && e.in.Session != "" {
			who = p(e.in.Agent) + "/" + who
		} else if e.in.Agent != "" {
			who = p(e.in.Agent)
		}
		shadow := ""
		if e.Custom != nil && e.Custom.Shadow {
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
		if e.Path == "harness/reset" {
			what = fmt.Sprintf("reset: usage of the %s, by the %s", resetWhat(e.reset.Scope, e.reset.Period), p(e.reset.By))
		}
		if len(codes) > 0 {
			what += " " + p(strings.Join(codes, ","))
		}
		fmt.Fprintf(c.stdout, "%s  %s  %s  %s\n", e.Timestamp.Format(time.RFC3339), p(e.DecisionID), who, what)
	}
	return exitOK
}

// storedJSON is a line of a log as --json prints it: the same JSON, on
// one line, with the characters a terminal would not print plainly
// escaped (printableJSON). The line is valid JSON (it was read as an
// entry or an event); compact, none of those characters is outside its
// strings, where an escape keeps the value.
func storedJSON(line []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, line) != nil {
		return contract.Printable(string(line))
	}
	return printableJSON(b.String())
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
