package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentharness/harness/contract"
)

// The HTML report is one page that needs nothing else: its charts are SVG
// drawn here (no charting script to fetch or embed), its style and its
// little script are inline (the script allowed by its hash alone), its text is in the browser's own fonts, and a
// Content-Security-Policy forbids it to load anything at all. Every string
// of it goes through html/template's escaping: tool names, sessions and
// reasons are the agents' choice.

//go:embed report.html
var pageSource string

// scriptHash is the page's script's SHA-256, which its
// Content-Security-Policy names: the one script it may run. The script
// (its legends switch their series on and off; it says how many charts
// the page drew, data-rendered on <body>, for whoever checks it) holds no
// template action and no comment, which html/template would strip, so it
// is rendered as written.
var scriptHash = func() string {
	i := strings.Index(pageSource, "<script>") + len("<script>")
	j := strings.Index(pageSource, "</script>")
	sum := sha256.Sum256([]byte(pageSource[i:j]))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}()

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"usd":  contract.FormatUSD,
	"show": show,
	"f":    func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
}).Parse(pageSource))

// palette colours the agents' series, in order.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"}

// Chart geometry, in SVG user units.
const (
	chartW, chartH          = 720, 260
	padLeft, padRight       = 64, 16
	padTop, padBottom       = 16, 36
	barChartW, barH, barGap = 720, 18, 6
	barLabelW, maxBars      = 220, 15
	maxUsageRows            = 40
	usageBarW               = 200
	maxSeriesAgents         = 10 // the palette's colours
	maxXTicks, yTicks       = 8, 4
	seriesDotsUpTo          = 60 // points shown as dots (with a tooltip each) up to this many
	minBarW                 = 1.0
	timeLabel, dayLabel     = "01-02 15:04", "2006-01-02"
)

type tick struct {
	Pos   float64
	Label string
}

type dot struct {
	X, Y  float64
	Title string
}

type lineSeries struct {
	Name, Color, Points string
	Dots                []dot
}

type lineChart struct {
	ID, Title, Unit string
	W, H            int
	Left, Bottom    float64
	Right, Top      float64
	Series          []lineSeries
	XTicks, YTicks  []tick
	More            int // agents left out
}

type bar struct {
	Label, Value, Title string
	Y, W                float64
}

type barChart struct {
	ID, Title string
	W, H      int
	LabelW    float64
	Bars      []bar
	More      int
}

type usageDim struct {
	Name, Text, Level string
	W, Warn, Block    float64
	HasLimit, Marks   bool
	// Blocks is false for a role that never blocks: no block mark.
	Blocks bool
}

type usageRow struct {
	Agent, Session, Role string
	Dims                 []usageDim
	Hits                 string
}

type view struct {
	R          *Report
	Range      string
	Generated  string
	Tokens     lineChart
	Cost       lineChart
	Reasons    barChart
	Tools      barChart
	Usage      []usageRow
	UsageMore  int
	UsageW     int
	Charts     int
	Header     string
	ScriptHash string
}

// WriteHTML writes the report as one self-contained HTML page with its
// charts: tokens and cost over time per agent, refusals by reason, the
// tools that took the most tokens, and each session's usage against its
// role's limits with the warn and block marks; then the table of the rows.
// now is the time it says it was made.
func (r *Report) WriteHTML(w io.Writer, now time.Time) error {
	v := view{R: r, Range: r.rangeText(), Generated: now.UTC().Format(time.RFC3339), Header: strings.ToUpper(r.By[:1]) + r.By[1:], UsageW: usageBarW}
	v.Tokens = r.lineChart("tokens", "Context tokens over time, per agent", func(p Point) float64 { return float64(p.Tokens) }, formatCount)
	v.Cost = r.lineChart("cost", "Cost over time, per agent", func(p Point) float64 { return float64(p.CostMicros) }, costLabel)
	var reasons []bar
	for _, x := range r.Reasons {
		reasons = append(reasons, bar{Label: x.Code, Value: strconv.FormatInt(x.Count, 10), W: float64(x.Count)})
	}
	v.Reasons = barsOf("reasons", "Refusals by reason", reasons)
	var tools []bar
	for _, t := range r.Tools {
		if t.Tokens == 0 {
			continue
		}
		tools = append(tools, bar{Label: t.Tool, Value: formatCount(float64(t.Tokens)), W: float64(t.Tokens),
			Title: fmt.Sprintf("%s: %d tokens, %s, %d calls", t.Tool, t.Tokens, contract.FormatUSD(t.CostMicros), t.Calls)})
	}
	v.Tools = barsOf("tools", "Top tools by tokens", tools)
	v.Usage, v.UsageMore = r.usageRows()
	v.ScriptHash = scriptHash
	v.Charts = 4
	if len(v.Usage) > 0 {
		v.Charts++
	}
	return page.Execute(w, v)
}

// lineChart draws one value of the series per agent over time.
func (r *Report) lineChart(id, title string, value func(Point) float64, label func(float64) string) lineChart {
	c := lineChart{ID: id, Title: title, W: chartW, H: chartH, Left: padLeft, Right: chartW - padRight, Top: padTop, Bottom: chartH - padBottom}
	s := r.Series
	agents := make([]string, 0, len(s.Agents))
	for a := range s.Agents {
		agents = append(agents, a)
	}
	total := func(a string) (t float64) {
		for _, p := range s.Agents[a] {
			t += value(p)
		}
		return t
	}
	slices.SortFunc(agents, func(a, b string) int {
		if ta, tb := total(a), total(b); ta != tb {
			if ta > tb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(agents) > maxSeriesAgents {
		c.More = len(agents) - maxSeriesAgents
		agents = agents[:maxSeriesAgents]
	}
	n := len(s.Start)
	var top float64
	for _, a := range agents {
		for _, p := range s.Agents[a] {
			top = max(top, value(p))
		}
	}
	top = niceCeil(top)
	x := func(i int) float64 {
		if n <= 1 {
			return (c.Left + c.Right) / 2
		}
		return c.Left + (c.Right-c.Left)*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 {
		if top == 0 {
			return c.Bottom
		}
		return c.Bottom - (c.Bottom-c.Top)*v/top
	}
	layout := timeLabel
	if s.Step >= 24*time.Hour {
		layout = dayLabel
	}
	for i := 0; i < n; i += max(1, (n+maxXTicks-1)/maxXTicks) {
		c.XTicks = append(c.XTicks, tick{Pos: x(i), Label: s.Start[i].UTC().Format(layout)})
	}
	for i := 0; i <= yTicks; i++ {
		v := top * float64(i) / yTicks
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: label(v)})
	}
	for ai, a := range agents {
		ls := lineSeries{Name: show(a), Color: palette[ai%len(palette)]}
		var pts []string
		for i, p := range s.Agents[a] {
			px, py := x(i), y(value(p))
			pts = append(pts, strconv.FormatFloat(px, 'f', 1, 64)+","+strconv.FormatFloat(py, 'f', 1, 64))
			if n <= seriesDotsUpTo {
				ls.Dots = append(ls.Dots, dot{X: px, Y: py, Title: fmt.Sprintf("%s, %s: %s", show(a), s.Start[i].UTC().Format(layout), label(value(p)))})
			}
		}
		ls.Points = strings.Join(pts, " ")
		c.Series = append(c.Series, ls)
	}
	return c
}

// barsOf lays horizontal bars out, the longest the widest.
func barsOf(id, title string, bars []bar) barChart {
	c := barChart{ID: id, Title: title, W: barChartW, LabelW: barLabelW}
	if len(bars) > maxBars {
		c.More = len(bars) - maxBars
		bars = bars[:maxBars]
	}
	var top float64
	for _, b := range bars {
		top = max(top, b.W)
	}
	room := float64(barChartW) - barLabelW - 80
	for i := range bars {
		b := &bars[i]
		b.Y = float64(i * (barH + barGap))
		if top > 0 {
			b.W = max(minBarW, room*b.W/top)
		}
		if b.Title == "" {
			b.Title = b.Label + ": " + b.Value
		}
		b.Label = show(b.Label)
		b.Title = contract.Printable(b.Title)
	}
	c.Bars = bars
	c.H = max(len(bars)*(barH+barGap), barH)
	return c
}

// usageRows are the sessions of the ledger with their usage against
// their role's limits, those nearest their limits first.
func (r *Report) usageRows() ([]usageRow, int) {
	type ranked struct {
		s    Session
		peak float64
	}
	var list []ranked
	for _, s := range r.Sessions {
		l := s.Ledger
		if l == nil || !l.Defined {
			continue
		}
		peak := 0.0
		for _, d := range [][2]int64{{l.Tokens, l.Limits.Tokens}, {l.Shell, l.Limits.Shell}, {l.CostMicros, l.Limits.CostMicros}} {
			if d[1] > 0 {
				peak = max(peak, float64(d[0])/float64(d[1]))
			}
		}
		list = append(list, ranked{s, peak})
	}
	slices.SortStableFunc(list, func(a, b ranked) int {
		switch {
		case a.peak > b.peak:
			return -1
		case a.peak < b.peak:
			return 1
		}
		return 0
	})
	more := 0
	if len(list) > maxUsageRows {
		more = len(list) - maxUsageRows
		list = list[:maxUsageRows]
	}
	out := make([]usageRow, 0, len(list))
	for _, x := range list {
		s, l := x.s, x.s.Ledger
		row := usageRow{Agent: show(s.Agent), Session: show(s.Session), Role: show(l.Role)}
		var hits []string
		for _, h := range s.Hits {
			hits = append(hits, h.Limit+" ("+strings.Join(h.How, ", ")+")")
		}
		row.Hits = contract.Printable(strings.Join(hits, ", "))
		for _, d := range []struct {
			name        string
			used, limit int64
			text        func(int64) string
		}{
			{"tokens", l.Tokens, l.Limits.Tokens, func(n int64) string { return strconv.FormatInt(n, 10) }},
			{"shell", l.Shell, l.Limits.Shell, func(n int64) string { return strconv.FormatInt(n, 10) }},
			{"cost", l.CostMicros, l.Limits.CostMicros, contract.FormatUSD},
		} {
			row.Dims = append(row.Dims, usageBar(d.name, d.used, d.limit, l.Limits.WarnPercent, l.Limits.BlockPercent, usageBarW, d.text))
		}
		out = append(out, row)
	}
	return out, more
}

// usageBar lays out one dimension's bar: its fill, the warn and block
// marks, its level. The scale runs to the block mark or to the usage,
// whichever is further (a limit of 0 is none: an empty bar).
func usageBar(name string, used, limit, warn, block int64, width float64, text func(int64) string) usageDim {
	d := usageDim{Name: name, Level: "ok", HasLimit: limit > 0}
	if limit <= 0 {
		d.Text = text(used) + " (no limit)"
		return d
	}
	pct := float64(used) * 100 / float64(limit)
	scale := math.Max(100, math.Max(float64(min(block, 100)), pct))
	if block > 100 {
		scale = math.Max(scale, float64(warn))
	}
	d.W = width * math.Min(pct, scale) / scale
	d.Warn = width * float64(warn) / scale
	d.Block = width * float64(min(block, 100)) / scale
	d.Marks, d.Blocks = true, block <= 100
	switch {
	case block <= 100 && pct >= float64(block):
		d.Level = "exhausted"
	case pct >= float64(warn):
		d.Level = "warning"
	}
	d.Text = fmt.Sprintf("%s/%s (%d%%)", text(used), text(limit), used*100/limit)
	return d
}

// niceCeil is the round number at or above x that an axis ends at.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// formatCount writes a count as an axis shows it: 950, 12k, 3.4M.
func formatCount(x float64) string {
	switch {
	case x >= 1e6:
		return strconv.FormatFloat(x/1e6, 'f', 1, 64) + "M"
	case x >= 1e4:
		return strconv.FormatFloat(math.Round(x/1e3), 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
}

// costLabel writes micro-dollars as an axis shows them: cents, or tenths
// of a cent below a dollar.
func costLabel(micros float64) string {
	if micros < 1e6 && micros > 0 {
		return "$" + strconv.FormatFloat(micros/1e6, 'f', 3, 64)
	}
	return contract.FormatUSD(int64(micros))
}

// WriteHTMLFile writes the page (see WriteHTML) to the file at path, whole
// or not at all: into a temporary file beside it, renamed over it once
// written.
func (r *Report) WriteHTMLFile(path string, now time.Time) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := r.WriteHTML(tmp, now); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
