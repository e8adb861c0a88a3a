package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentharness/harness/contract"
)

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// keyHeader is the heading of the rows' key column.
func (r *Report) keyHeader() string { return strings.ToUpper(r.By) }

// show is a key as a terminal may show it: agent-chosen strings
// (contract.Printable), "-" for none.
func show(s string) string {
	if s == "" {
		return "-"
	}
	return contract.Printable(s)
}

// rangeText says what the report covers.
func (r *Report) rangeText() string {
	from, to := "the start", "now"
	if !r.From.IsZero() {
		from = r.From.UTC().Format(time.RFC3339)
	}
	if !r.To.IsZero() {
		to = r.To.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("from %s to %s", from, to)
}

// WriteTable writes the report as aligned columns for a terminal: the
// rows and their total, the refusals by reason, the sessions that hit a
// limit, and what the ledger says.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Where the budget went, %s, by %s: %d calls and %d charges of %d sessions", r.rangeText(), r.By,
		r.Totals.Calls, r.Totals.Charges, r.Totals.Sessions)
	if r.Skipped > 0 {
		fmt.Fprintf(w, " (%d unreadable lines skipped)", r.Skipped)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tCALLS\tALLOWED\tWARNED\tDENIED\tTOKENS\tSHELL\tCOST\tSESSIONS\tHIT A LIMIT\t\n", r.keyHeader())
	row := func(g Group, total bool) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t\n", r.rowKey(show(g.Key), total), g.Calls, g.Allowed, g.Warned, g.Denied,
			g.Tokens, g.Shell, contract.FormatUSD(g.CostMicros), g.Sessions, g.Limited)
	}
	for _, g := range r.Groups {
		row(g, false)
	}
	row(r.Totals, true)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Reasons) > 0 {
		fmt.Fprint(w, "\nRefusals by reason\n")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "REASON\tCALLS\tBY %s\n", r.keyHeader())
		for _, reason := range r.Reasons {
			var in []string
			for _, g := range r.Groups {
				if n := g.DeniedBy[reason.Code]; n > 0 {
					in = append(in, fmt.Sprintf("%s %d", show(g.Key), n))
				}
			}
			if len(in) > 4 {
				in = append(in[:4], fmt.Sprintf("+%d more", len(in)-4))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", show(reason.Code), reason.Count, strings.Join(in, ", "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if limited := r.Limited(); len(limited) > 0 {
		fmt.Fprint(w, "\nSessions that hit a limit\n")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tSESSION\tROLE\tLIMITS\tTOKENS\tSHELL\tCOST")
		for _, s := range limited {
			var hits []string
			for _, h := range s.Hits {
				hits = append(hits, fmt.Sprintf("%s (%s) %s", h.Limit, strings.Join(h.How, ", "), h.At.UTC().Format(time.RFC3339)))
			}
			tokens, shell, cost := fmt.Sprint(s.Tokens), fmt.Sprint(s.Shell), contract.FormatUSD(s.CostMicros)
			if l := s.Ledger; l != nil && l.Defined {
				tokens += "/" + strconv.FormatInt(l.Limits.Tokens, 10)
				shell += "/" + strconv.FormatInt(l.Limits.Shell, 10)
				cost += "/" + contract.FormatUSD(l.Limits.CostMicros)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", show(s.Agent), show(s.Session), show(s.Role), strings.Join(hits, "; "), tokens, shell, cost)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.LedgerLine())
	return err
}

// LedgerLine says what the ledger holds of the report's sessions and
// whether the log accounts for it.
func (r *Report) LedgerLine() string {
	l := r.Ledger
	line := fmt.Sprintf("Ledger: tokens %d, shell %d, cost %s across these %d sessions", l.Tokens, l.Shell, contract.FormatUSD(l.CostMicros), len(r.Sessions))
	if r.Accounted {
		return line + ": the log accounts for all of it."
	}
	var short []string
	for _, s := range r.Sessions {
		if !s.Accounted {
			short = append(short, show(s.Agent)+"/"+show(s.Session))
		}
	}
	if len(short) > 5 {
		short = append(short[:5], fmt.Sprintf("and %d more", len(short)-5))
	}
	return line + fmt.Sprintf(": the log does not account for %s (its older files rotated away, usage reset, or logging was off)", strings.Join(short, ", "))
}

// WriteCSV writes the rows and their total as CSV, with a column for each
// reason code of a refusal. A field that a spreadsheet would take for a
// formula (=, +, -, @ first) is quoted with a leading apostrophe, and
// control characters are escaped (see safeCell): a tool name is the
// agent's choice.
func (r *Report) WriteCSV(w io.Writer) error {
	codes := make([]string, 0, len(r.Reasons))
	for _, reason := range r.Reasons {
		codes = append(codes, reason.Code)
	}
	slices.Sort(codes)
	cw := csv.NewWriter(w)
	header := []string{r.By, "calls", "allowed", "warned", "denied", "tokens", "shell", "cost_usd", "withheld_tokens", "sessions", "sessions_limited"}
	for _, c := range codes {
		header = append(header, "denied_"+safeCell(c))
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	row := func(g Group, total bool) error {
		rec := []string{r.rowKey(safeCell(g.Key), total), i64(g.Calls), i64(g.Allowed), i64(g.Warned), i64(g.Denied), i64(g.Tokens), i64(g.Shell),
			strconv.FormatFloat(float64(g.CostMicros)/1e6, 'f', 6, 64), i64(g.Withheld), strconv.Itoa(g.Sessions), strconv.Itoa(g.Limited)}
		for _, c := range codes {
			rec = append(rec, i64(g.DeniedBy[c]))
		}
		return cw.Write(rec)
	}
	for _, g := range r.Groups {
		if err := row(g, false); err != nil {
			return err
		}
	}
	if err := row(r.Totals, true); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// rowKey is a row's key as shown: a group's key that reads as the
// totals' (a tool the agent named TOTAL) is quoted with a leading
// apostrophe, so that only the totals' row is keyed TOTAL.
func (r *Report) rowKey(shown string, total bool) string {
	if !total && shown == r.Totals.Key {
		return "'" + shown
	}
	return shown
}

// safeCell keeps a spreadsheet from reading a field as a formula, and a
// terminal (harness report --csv) from reading it as control sequences:
// its characters are shown Printable, as the table shows them.
func safeCell(s string) string {
	s = contract.Printable(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
