package report

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agentharness/harness/budget"
	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/events"
)

// Options are what a report reads and how it adds up.
type Options struct {
	// Decisions is the decision log's path, Events the events log's ("":
	// none); MaxFiles how many rotated files of each are kept (NAME.1 …
	// NAME.N are read before NAME).
	Decisions, Events string
	MaxFiles          int
	// From and To bound the range: entries at From or later and before
	// To (a zero time leaves that side open).
	From, To time.Time
	// By groups the rows: one of Groupings (default ByAgent).
	By string
	// Ledger are the ledger's sessions, the authority on their counters.
	Ledger []LedgerSession
	// Step is the interval of the series (0: an hour for a range of up
	// to two days, a day up to 90 days, else a week).
	Step time.Duration
	// Progress, if set, hears how many bytes of the logs were read of how
	// many, now and then and once at the end.
	Progress func(done, total int64)
}

// progressEvery is how many bytes are read between two calls of
// Options.Progress.
const progressEvery = 1 << 20

// Build reads the logs and adds up the report. It streams them, a line at
// a time: memory grows with the number of sessions, tools and agents, not
// with the size of the logs.
func Build(ctx context.Context, o Options) (*Report, error) {
	if o.By == "" {
		o.By = ByAgent
	}
	if !slices.Contains(Groupings, o.By) {
		return nil, fmt.Errorf("report: unknown grouping %q; want one of %v", o.By, Groupings)
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return nil, fmt.Errorf("report: the range ends (%s) before it starts (%s)", o.To.Format(time.RFC3339), o.From.Format(time.RFC3339))
	}
	a := newAggregate(o)
	var files []string
	if o.Decisions != "" {
		files = append(files, events.Files(o.Decisions, o.MaxFiles)...)
	}
	nDecisions := len(files)
	if o.Events != "" {
		files = append(files, events.Files(o.Events, o.MaxFiles)...)
	}
	var total int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	var done, reported int64
	tick := func(n int) {
		done += int64(n)
		if o.Progress != nil && done-reported >= progressEvery {
			reported = done
			o.Progress(done, total)
		}
	}
	for i, f := range files {
		parse, apply := parseDecision, a.applyDecision
		if i >= nDecisions {
			parse, apply = parseEvent, a.applyEvent
		}
		err := readParsed(ctx, f, tick, parse, func(b *batch) {
			a.skipped += b.skipped
			for i := range b.lines {
				apply(&b.lines[i])
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if o.Progress != nil {
		o.Progress(max(done, total), max(done, total))
	}
	return a.report(), nil
}

// pathReset is a reset's entry in the decision log (see
// contract.ResetInput): a session's counters start again from zero.
const pathReset = "harness/reset"

// blockSize is how much of a log one worker parses at a time.
const blockSize = 1 << 20

// batch is what a worker made of a block: its lines parsed, and how many
// were skipped.
type batch struct {
	lines   []line
	skipped int64
	bytes   int
}

// readParsed reads the file at path (a file rotated away meanwhile is
// none) in blocks of whole lines, parses their lines on every core, and
// gives each block's lines to apply, in this goroutine (in no particular
// order: what is added up does not depend on it); tick hears the bytes
// read. A last line without its newline is still being written, and left.
func readParsed(ctx context.Context, path string, tick func(int), parse func([]byte) (line, bool, bool), apply func(*batch)) error {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	blocks := make(chan []byte, 2)
	batches := make(chan *batch, 2)
	var readErr error
	go func() { // the reader: blocks that end at a newline
		defer close(blocks)
		var carry []byte
		for {
			buf := make([]byte, len(carry), max(blockSize, 2*len(carry)))
			copy(buf, carry)
			n, err := io.ReadFull(file, buf[len(carry):cap(buf)])
			buf = buf[:len(carry)+n]
			end := bytes.LastIndexByte(buf, '\n') + 1
			carry = buf[end:] // a line longer than a block grows the next one
			if end > 0 {
				select {
				case blocks <- buf[:end]:
				case <-ctx.Done():
					return
				}
			}
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			if err != nil {
				readErr = fmt.Errorf("%s: %w", path, err)
				return
			}
		}
	}()
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			for block := range blocks {
				b := &batch{lines: make([]line, 0, len(block)/512), bytes: len(block)}
				for len(block) > 0 {
					i := bytes.IndexByte(block, '\n')
					l, ok, skip := parse(block[:i])
					switch {
					case ok:
						b.lines = append(b.lines, l)
					case skip:
						b.skipped++
					}
					block = block[i+1:]
				}
				select {
				case batches <- b:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		workers.Wait()
		close(batches)
	}()
	for b := range batches {
		apply(b)
		tick(b.bytes)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return readErr
}

// aggregate adds entries up as they are read.
type aggregate struct {
	o        Options
	groups   map[string]*groupAgg
	sessions map[budget.Key]*sessionAgg
	tools    map[string]*Tool
	reasons  map[string]int64
	// hours are the charges per agent per hour (Unix time / 3600), for
	// the series.
	hours   map[string]map[int64]Point
	days    map[int64]string
	first   time.Time
	last    time.Time
	entries int64
	skipped int64
}

type groupAgg struct {
	Group
	sessions map[budget.Key]struct{}
}

type sessionAgg struct {
	Session
	inRange bool
	hits    map[string]Hit
}

func newAggregate(o Options) *aggregate {
	return &aggregate{o: o, groups: map[string]*groupAgg{}, sessions: map[budget.Key]*sessionAgg{},
		tools: map[string]*Tool{}, reasons: map[string]int64{}, hours: map[string]map[int64]Point{}, days: map[int64]string{}}
}

// line is what the report reads of an entry or an event.
type line struct {
	path, role, tool, session, agent string
	at                               time.Time
	decision                         string
	shadow                           bool
	reasons                          []string
	custom                           int64
	tokens, cost, shell, withheld    int64
	// exhausted are the limits a denied call met.
	exhausted []string
	// events
	typ, dimension, scope string
}

func (a *aggregate) inRange(t time.Time) bool {
	return (a.o.From.IsZero() || !t.Before(a.o.From)) && (a.o.To.IsZero() || t.Before(a.o.To))
}

func (a *aggregate) session(l *line) *sessionAgg {
	k := budget.Key{Agent: l.agent, Session: l.session}
	s := a.sessions[k]
	if s == nil {
		s = &sessionAgg{Session: Session{Agent: l.agent, Session: l.session}}
		a.sessions[k] = s
	}
	return s
}

// parseDecision reads one line of the decision log; ok is false for a
// line that is not an entry of a call or a charge (skip: it is not a
// switch either, which the report leaves alone).
func parseDecision(raw []byte) (l line, ok, skip bool) {
	ok = true
	var result gjson.Result
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "path":
			l.path = v.Str
		case "timestamp":
			t, err := time.Parse(time.RFC3339Nano, v.Str)
			if err != nil {
				ok = false
				return false
			}
			l.at = t
		case "shadow": // where logs before custom.shadow had it
			l.shadow = l.shadow || v.Bool()
		case "custom":
			l.custom = v.Get(events.CustomShell).Int()
			l.shadow = l.shadow || v.Get("shadow").Bool()
		case "input":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "role":
					l.role = v.Str
				case "tool":
					l.tool = v.Str
				case "session":
					l.session = v.Str
				case "agent":
					l.agent = v.Str
				case "scope":
					l.scope = v.Str
				}
				return true
			})
		case "result":
			result = v
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "decision":
					l.decision = v.Str
				case "reasons":
					v.ForEach(func(_, r gjson.Result) bool {
						l.reasons = append(l.reasons, r.Get("code").Str)
						return true
					})
				case "tokens":
					l.tokens = v.Int()
				case "cost_micros":
					l.cost = v.Int()
				case "shell":
					l.shell = v.Int()
				case "withheld":
					l.withheld = v.Int()
				}
				return true
			})
		}
		return true
	})
	if ok && l.path == pathReset && l.scope == events.ScopeSession && l.session != "" {
		return l, true, false
	}
	if !ok || l.at.IsZero() || l.session == "" || (l.path != events.PathDecision && l.path != events.PathCharge) {
		return l, false, l.path != events.PathSwitch && l.path != pathReset
	}
	if l.decision == contract.Deny {
		l.exhausted = exhaustedBy(l.reasons, result)
	}
	return l, true, false
}

// applyDecision adds up one entry of the decision log.
func (a *aggregate) applyDecision(l *line) {
	s := a.session(l)
	if l.path == pathReset {
		s.Reset = true
		return
	}
	// What the ledger should hold, whatever the range.
	if l.path == events.PathDecision {
		s.Logged.Shell += l.custom
	} else {
		s.Logged.Tokens += l.tokens
		s.Logged.Shell += l.shell
		s.Logged.CostMicros += l.cost
	}
	if !a.inRange(l.at) {
		return
	}
	a.entries++
	a.seen(l.at)
	if !s.inRange || l.at.Before(s.First) {
		s.First = l.at
	}
	if !s.inRange || !l.at.Before(s.Last) {
		s.Last = l.at
		if l.role != "" {
			s.Role = l.role
		}
	}
	s.inRange = true
	g := a.group(l)
	g.sessions[budget.Key{Agent: l.agent, Session: l.session}] = struct{}{}
	t := a.tools[l.tool]
	if t == nil {
		t = &Tool{Tool: l.tool}
		a.tools[l.tool] = t
	}
	if l.path == events.PathDecision {
		t.Calls++
		for _, c := range []*Counts{&g.Counts, &s.Counts} {
			c.add(l)
		}
		if l.decision == contract.Deny {
			for _, r := range l.reasons {
				a.reasons[r]++
			}
			for _, limit := range l.exhausted {
				s.hit(limit, HitRefused, l.at)
			}
		}
		return
	}
	for _, c := range []*Counts{&g.Counts, &s.Counts} {
		c.add(l)
	}
	t.Tokens += l.tokens
	t.CostMicros += l.cost
	if l.withheld > 0 {
		s.hit("budget", HitCut, l.at)
	}
	if l.tokens != 0 || l.cost != 0 {
		h := a.hours[l.agent]
		if h == nil {
			h = map[int64]Point{}
			a.hours[l.agent] = h
		}
		hour := l.at.Unix() / 3600
		p := h[hour]
		p.Tokens += l.tokens
		p.CostMicros += l.cost
		h[hour] = p
	}
}

// add counts a decision or a charge.
func (c *Counts) add(l *line) {
	if l.path == events.PathCharge {
		c.Charges++
		c.Tokens += l.tokens
		c.Shell += l.shell
		c.CostMicros += l.cost
		c.Withheld += l.withheld
		return
	}
	c.Calls++
	c.Shell += l.custom
	switch l.decision {
	case contract.Allow:
		c.Allowed++
	case contract.Warn:
		c.Warned++
	default:
		c.Denied++
		if l.shadow {
			c.Shadowed++
		}
		if c.DeniedBy == nil {
			c.DeniedBy = map[string]int64{}
		}
		for _, r := range l.reasons {
			c.DeniedBy[r]++
		}
	}
}

// exhaustedBy are the limits a denied call met, by its reasons: the
// budget's exhausted dimensions, the shell budget, the agent's.
func exhaustedBy(reasons []string, result gjson.Result) []string {
	var out []string
	for _, code := range reasons {
		switch code {
		case contract.CodeShellBudget:
			out = append(out, "shell")
		case contract.CodeAgentShellBudget:
			out = append(out, "agent shell")
		case contract.CodeBudgetExhausted, contract.CodeAgentBudgetExhausted:
			prefix, budget := "", result.Get("budget")
			if code == contract.CodeAgentBudgetExhausted {
				prefix, budget = "agent ", result.Get("agent_budget")
			}
			for _, dim := range []string{"tokens", "shell", "cost"} {
				if budget.Get(dim+".level").Str == contract.LevelExhausted {
					out = append(out, prefix+dim)
				}
			}
		}
	}
	return out
}

func (s *sessionAgg) hit(limit, how string, at time.Time) {
	if s.hits == nil {
		s.hits = map[string]Hit{}
	}
	h, ok := s.hits[limit]
	if !ok || at.Before(h.At) {
		h.Limit, h.At = limit, at
	}
	if !slices.Contains(h.How, how) {
		h.How = append(h.How, how)
		slices.Sort(h.How)
	}
	s.hits[limit] = h
}

func (a *aggregate) seen(t time.Time) {
	if a.first.IsZero() || t.Before(a.first) {
		a.first = t
	}
	if t.After(a.last) {
		a.last = t
	}
}

// group is the row of an entry.
func (a *aggregate) group(l *line) *groupAgg {
	var key string
	switch a.o.By {
	case ByAgent:
		key = l.agent
	case BySession:
		key = budget.Key{Agent: l.agent, Session: l.session}.String()
	case ByRole:
		key = l.role
	case ByTool:
		key = l.tool
	case ByDay:
		day := l.at.Unix() / 86400
		if l.at.Unix() < 0 && l.at.Unix()%86400 != 0 {
			day--
		}
		key = a.days[day]
		if key == "" {
			key = l.at.UTC().Format(time.DateOnly)
			a.days[day] = key
		}
	}
	g := a.groups[key]
	if g == nil {
		g = &groupAgg{Group: Group{Key: key}, sessions: map[budget.Key]struct{}{}}
		if a.o.By == BySession {
			g.Agent, g.Session = l.agent, l.session
		}
		a.groups[key] = g
	}
	return g
}

// parseEvent reads one line of the events log: the exhausted budgets.
func parseEvent(raw []byte) (l line, ok, skip bool) {
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			l.typ = v.Str
		case "time":
			l.at, _ = time.Parse(time.RFC3339Nano, v.Str)
		case "session":
			l.session = v.Str
		case "agent":
			l.agent = v.Str
		case "role":
			l.role = v.Str
		case "dimension":
			l.dimension = v.Str
		case "scope":
			l.scope = v.Str
		}
		return true
	})
	return l, l.typ == string(events.BudgetExhausted) && l.session != "" && !l.at.IsZero(), false
}

// applyEvent notes a session's exhausted budget.
func (a *aggregate) applyEvent(l *line) {
	if !a.inRange(l.at) {
		return
	}
	limit := l.dimension
	if l.scope == events.ScopeAgent {
		limit = "agent " + limit
	}
	a.session(l).hit(limit, HitExhausted, l.at)
}

// report puts the sums in order and beside the ledger's counters.
func (a *aggregate) report() *Report {
	r := &Report{From: a.o.From, To: a.o.To, By: a.o.By, First: a.first, Last: a.last,
		Entries: a.entries, Skipped: a.skipped, Accounted: true, Groups: []Group{}, Reasons: []Reason{}, Tools: []Tool{}, Sessions: []Session{}}
	ledger := map[budget.Key]*LedgerSession{}
	for i := range a.o.Ledger {
		l := &a.o.Ledger[i]
		k := budget.Key{Agent: l.Agent, Session: l.Session}
		ledger[k] = l
		// A session the ledger changed in the range that the log lacks.
		if _, ok := a.sessions[k]; !ok && (a.o.From.IsZero() && a.o.To.IsZero() || !l.Updated.IsZero() && a.inRange(l.Updated)) {
			a.sessions[k] = &sessionAgg{Session: Session{Agent: l.Agent, Session: l.Session, Role: l.Role}, inRange: true}
		}
	}
	limited := map[budget.Key]bool{}
	for k, s := range a.sessions {
		if !s.inRange {
			continue
		}
		for _, h := range s.hits {
			s.Hits = append(s.Hits, h)
		}
		slices.SortFunc(s.Hits, func(x, y Hit) int {
			return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.Limit, y.Limit))
		})
		if s.Hits == nil {
			s.Hits = []Hit{}
		}
		limited[k] = len(s.Hits) > 0
		s.Ledger = ledger[k]
		if s.Ledger != nil {
			if s.Role == "" {
				s.Role = s.Ledger.Role
			}
			s.Accounted = s.Logged == Usage{Tokens: s.Ledger.Tokens, Shell: s.Ledger.Shell, CostMicros: s.Ledger.CostMicros}
			if s.Reset { // the ledger holds at most what was logged
				s.Accounted = s.Ledger.Tokens <= s.Logged.Tokens && s.Ledger.Shell <= s.Logged.Shell && s.Ledger.CostMicros <= s.Logged.CostMicros
			}
			r.Ledger.Tokens += s.Ledger.Tokens
			r.Ledger.Shell += s.Ledger.Shell
			r.Ledger.CostMicros += s.Ledger.CostMicros
		} else {
			s.Accounted = s.Logged == Usage{}
		}
		r.Accounted = r.Accounted && s.Accounted
		r.Sessions = append(r.Sessions, s.Session)
	}
	slices.SortFunc(r.Sessions, func(x, y Session) int {
		return cmp.Or(cmp.Compare(x.Agent, y.Agent), cmp.Compare(x.Session, y.Session))
	})
	all := map[budget.Key]struct{}{}
	for _, g := range a.groups {
		g.Sessions = len(g.sessions)
		for k := range g.sessions {
			all[k] = struct{}{}
			if limited[k] {
				g.Limited++
			}
		}
		r.Groups = append(r.Groups, g.Group)
		r.Totals.Counts.merge(g.Counts)
	}
	r.Totals.Key = "TOTAL"
	r.Totals.Sessions = len(all)
	for k := range all {
		if limited[k] {
			r.Totals.Limited++
		}
	}
	slices.SortFunc(r.Groups, func(x, y Group) int { return cmp.Compare(x.Key, y.Key) })
	for code, n := range a.reasons {
		r.Reasons = append(r.Reasons, Reason{Code: code, Count: n})
	}
	slices.SortFunc(r.Reasons, func(x, y Reason) int { return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Code, y.Code)) })
	for _, t := range a.tools {
		r.Tools = append(r.Tools, *t)
	}
	slices.SortFunc(r.Tools, func(x, y Tool) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), cmp.Compare(y.Calls, x.Calls), cmp.Compare(x.Tool, y.Tool))
	})
	r.Series = a.series()
	return r
}

func (c *Counts) merge(o Counts) {
	c.Calls += o.Calls
	c.Allowed += o.Allowed
	c.Warned += o.Warned
	c.Denied += o.Denied
	c.Shadowed += o.Shadowed
	c.Tokens += o.Tokens
	c.Shell += o.Shell
	c.CostMicros += o.CostMicros
	c.Withheld += o.Withheld
	c.Charges += o.Charges
	for k, n := range o.DeniedBy {
		if c.DeniedBy == nil {
			c.DeniedBy = map[string]int64{}
		}
		c.DeniedBy[k] += n
	}
}

// series lays the hourly charges over intervals of the step.
func (a *aggregate) series() Series {
	s := Series{Agents: map[string][]Point{}, Start: []time.Time{}}
	if a.first.IsZero() {
		return s
	}
	from, to := a.first, a.last
	if !a.o.From.IsZero() {
		from = a.o.From
	}
	if !a.o.To.IsZero() && a.o.To.Before(a.last.Add(7*24*time.Hour)) {
		to = a.o.To.Add(-time.Nanosecond)
	}
	step := a.o.Step
	if step <= 0 {
		switch span := to.Sub(from); {
		case span <= 48*time.Hour:
			step = time.Hour
		case span <= 90*24*time.Hour:
			step = 24 * time.Hour
		default:
			step = 7 * 24 * time.Hour
		}
	}
	s.Step = step
	start := from.UTC().Truncate(step)
	n := int(to.Sub(start)/step) + 1
	if n > 10000 { // a range far wider than its entries: bounded
		n = 10000
	}
	for i := range n {
		s.Start = append(s.Start, start.Add(time.Duration(i)*step))
	}
	for agent, hours := range a.hours {
		points := make([]Point, n)
		for hour, p := range hours {
			i := int(time.Unix(hour*3600, 0).Sub(start) / step)
			if i < 0 || i >= n {
				continue
			}
			points[i].Tokens += p.Tokens
			points[i].CostMicros += p.CostMicros
		}
		s.Agents[agent] = points
	}
	return s
}
