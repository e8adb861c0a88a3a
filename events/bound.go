package events

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentharness/harness/contract"
)

// MaxLine is the most bytes one line of either log takes, its newline
// included. An entry or an event that would be longer is cut down to it: long
// strings are cut with a marker saying how many bytes were cut, long lists
// and objects end with an item saying how many more there were. So a log
// whose files rotate at MaxBytes keeps, whatever the content of its lines,
// at least MaxFiles × ⌊MaxBytes / MaxLine⌋ of the last lines (800 with the
// default rotation), and no single call can push the calls before it out.
const MaxLine = 64 << 10

// maxJSON is the most bytes of JSON in a line.
const maxJSON = MaxLine - 1

// MaxReasons is how many reasons, and how many warnings, of one decision
// its log entry and its event list; the rest are summarised by one more
// (see SummariseReasons).
const MaxReasons = 100

// Truncated is the code of the reason that stands for those left out.
const Truncated = "truncated"

// SummariseReasons returns at most MaxReasons of list, and then one reason
// (code Truncated, "… and N more") for the rest.
func SummariseReasons(list []contract.Reason) []contract.Reason {
	if len(list) <= MaxReasons+1 {
		return list
	}
	out := slices.Clone(list[:MaxReasons])
	return append(out, contract.Reason{Code: Truncated, Message: more(len(list) - MaxReasons)})
}

func more(n int) string { return fmt.Sprintf("… and %d more", n) }

// summarised returns a decision result with its lists of reasons
// summarised, before it is marshalled and searched for masked values.
func summarised(result any) any {
	switch d := result.(type) {
	case contract.Decision:
		if len(d.Reasons) > MaxReasons+1 || len(d.Warnings) > MaxReasons+1 {
			d.Reasons, d.Warnings = SummariseReasons(d.Reasons), SummariseReasons(d.Warnings)
			return d
		}
	case contract.SwitchDecision:
		if len(d.Reasons) > MaxReasons+1 {
			d.Reasons = SummariseReasons(d.Reasons)
			return d
		}
	}
	return result
}

const (
	// minShare is the least room a kept value of a list or an object gets:
	// enough for a cut marker.
	minShare = 128
	// maxKey is the longest object key kept whole; a longer one is cut.
	maxKey = 64
	// reserve is room kept for the item that says how many more there were.
	reserve = 48
	// minCut is the most a cut value takes: its marker, quoted.
	minCut = 32
)

// node is a decoded JSON value with the length of its encoding.
type node struct {
	v    any
	size int
	keys []string // an object's keys, sorted (as json.Marshal writes them)
	kids []*node  // an object's values, in the order of keys, or an array's
}

func tree(v any) *node {
	n := &node{v: v}
	switch x := v.(type) {
	case string:
		n.size = quotedLen(x)
	case json.Number:
		n.size = len(x)
	case bool:
		n.size = len(strconv.FormatBool(x))
	case nil:
		n.size = len("null")
	case []any:
		n.size = 2 + max(len(x)-1, 0)
		for _, c := range x {
			k := tree(c)
			n.kids = append(n.kids, k)
			n.size += k.size
		}
	case map[string]any:
		n.keys = make([]string, 0, len(x))
		for k := range x {
			n.keys = append(n.keys, k)
		}
		slices.Sort(n.keys)
		n.size = 2 + max(len(x)-1, 0)
		for _, k := range n.keys {
			c := tree(x[k])
			n.kids = append(n.kids, c)
			n.size += quotedLen(k) + 1 + c.size
		}
	}
	return n
}

// quotedLen is the length of s as json.Marshal quotes it.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// shrink returns the value of n cut to fit in budget bytes of JSON (about:
// a marker may take a few bytes more when budget is below minShare).
func shrink(n *node, budget int) any {
	if n.size <= budget {
		return n.v
	}
	switch x := n.v.(type) {
	case string:
		return cutString(x, budget)
	case []any:
		return shrinkArray(n, budget)
	case map[string]any:
		return shrinkObject(n, budget)
	}
	return fmt.Sprintf("[cut: %d bytes]", n.size) // a number too long
}

// cutString keeps the longest beginning of s that fits in budget with a
// marker saying how many bytes were cut.
func cutString(s string, budget int) string {
	marker := fmt.Sprintf("… [cut %d bytes]", len(s))
	room := budget - quotedLen(marker)
	kept := 0
	for used := 0; kept < len(s); {
		_, size := utf8.DecodeRuneInString(s[kept:])
		w := quotedLen(s[kept:kept+size]) - 2
		if used+w > room {
			break
		}
		used += w
		kept += size
	}
	return s[:kept] + fmt.Sprintf("… [cut %d bytes]", len(s)-kept)
}

// share divides avail among values of the given sizes. It keeps as many as
// can each have min(size, minShare): a beginning of them for an array
// (inOrder), the smallest for an object; and fills avail among those kept,
// the smallest first, so that a value that fits is kept whole and the
// larger share what is left equally. A value left out has -1.
func share(sizes []int, avail int, inOrder bool) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	bySize := func(a, b int) int { return cmp.Compare(sizes[a], sizes[b]) }
	if !inOrder {
		slices.SortStableFunc(order, bySize)
	}
	kept, need := 0, 0
	for _, i := range order {
		if need += min(sizes[i], minShare); need > avail {
			break
		}
		kept++
	}
	keep := slices.Clone(order[:kept])
	slices.SortStableFunc(keep, bySize)
	budgets := make([]int, len(sizes))
	for i := range budgets {
		budgets[i] = -1
	}
	left := avail
	for j, i := range keep {
		b := min(sizes[i], left/(kept-j))
		budgets[i] = b
		left -= b
	}
	return budgets
}

func shrinkArray(n *node, budget int) any {
	if len(n.kids) == 0 { // [] itself, given less room than its 2 bytes
		return []any{}
	}
	sizes := make([]int, len(n.kids))
	for i, k := range n.kids {
		sizes[i] = k.size + 1
	}
	budgets := share(sizes, budget-2-reserve, true)
	out := make([]any, 0, len(n.kids))
	for i, k := range n.kids {
		if budgets[i] < 0 {
			break
		}
		out = append(out, shrink(k, budgets[i]-1))
	}
	_, objects := n.kids[0].v.(map[string]any) // n is too long: not empty
	if dropped := len(n.kids) - len(out); dropped > 0 {
		if objects { // shaped like the items it stands for (reasons)
			out = append(out, map[string]any{"code": Truncated, "message": more(dropped)})
		} else {
			out = append(out, more(dropped))
		}
	}
	return out
}

func shrinkObject(n *node, budget int) any {
	keys := make([]string, len(n.keys))
	sizes := make([]int, len(n.keys))
	for i, k := range n.keys {
		keys[i] = k
		if quotedLen(k) > maxKey+2 { // long as written (escapes count)
			keys[i] = cutString(k, maxKey)
		}
		sizes[i] = quotedLen(keys[i]) + 2 + n.kids[i].size
	}
	budgets := share(sizes, budget-2-reserve, false)
	out := make(map[string]any, len(n.keys))
	dropped := 0
	for i, k := range keys {
		if budgets[i] < 0 {
			dropped++
			continue
		}
		for j := 2; ; j++ { // a cut key may meet another
			if _, taken := out[k]; !taken {
				break
			}
			k = keys[i] + " #" + strconv.Itoa(j)
		}
		// A key that leaves its value less room than the value's cut
		// takes (a marker), or its whole value if shorter, is dropped:
		// values cut past their room would together pass the line's.
		room := budgets[i] - (quotedLen(k) + 2)
		if room < min(n.kids[i].size, minCut) {
			dropped++
			continue
		}
		out[k] = shrink(n.kids[i], room)
	}
	if dropped > 0 {
		out["…"] = fmt.Sprintf("%d more keys", dropped)
	}
	return out
}

// bounded returns raw (a JSON value) cut to fit in budget bytes.
func bounded(raw json.RawMessage, budget int) (json.RawMessage, error) {
	if len(raw) <= budget {
		return raw, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(shrink(tree(v), budget))
}

// boundEntry returns the line of e cut to maxJSON: its input and result
// share what its other fields leave, the smaller kept whole if it fits in
// half; erased paths take at most 4 KiB.
func boundEntry(e Entry) ([]byte, error) {
	var err error
	for _, l := range []*[]string{&e.Erased, &e.Masked} {
		if *l == nil {
			continue
		}
		raw, _ := json.Marshal(*l)
		if raw, err = bounded(raw, 4<<10); err != nil {
			return nil, err
		}
		var list []string
		json.Unmarshal(raw, &list)
		*l = list
	}
	rest := e
	rest.Input, rest.Result = json.RawMessage("0"), json.RawMessage("0")
	base, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	budgets := share([]int{len(e.Input), len(e.Result)}, maxJSON-len(base)+2, false)
	in, out, result := e.Input, e.Result, e.Result
	// A value the decoder cannot read back (nested past its 10,000
	// levels: an agent's arguments a level under the input) is cut whole.
	if in, err = bounded(in, max(budgets[0], minShare)); err != nil {
		in = json.RawMessage(fmt.Sprintf(`{"…":"[cut: %d bytes, nested too deep to read back]"}`, len(e.Input)))
	}
	if out, err = bounded(out, max(budgets[1], minShare)); err != nil {
		out = json.RawMessage(fmt.Sprintf(`{"…":"[cut: %d bytes, nested too deep to read back]"}`, len(e.Result)))
	}
	e.Input, e.Result = in, out
	b, err := json.Marshal(e)
	if err != nil || len(b) <= maxJSON {
		return b, err
	}
	// Only labels or metrics beyond reason could get here: keep the ids,
	// and of a decision its outcome.
	e.Input = json.RawMessage(fmt.Sprintf(`{"…":"[cut: %d bytes]"}`, len(in)))
	e.Result = json.RawMessage(fmt.Sprintf(`{"…":"[cut: %d bytes]"}`, len(out)))
	if o := outcomeOf(result); o != nil {
		e.Result = o
	}
	e.Erased, e.Masked, e.Labels, e.Metrics, e.Bundles = nil, nil, nil, nil, nil
	return json.Marshal(e)
}

// boundEvent returns the line of e, marshalled as b, cut to maxJSON.
func boundEvent(e Event, b []byte) ([]byte, error) {
	out, err := bounded(b, maxJSON)
	if err != nil || len(out) <= maxJSON {
		return out, err
	}
	cut := func(s string) string {
		if len(s) > maxKey {
			return cutString(s, maxKey)
		}
		return s
	}
	return json.Marshal(Event{ID: e.ID, Type: Type(cut(string(e.Type))), Time: e.Time,
		Session: cut(e.Session), Agent: cut(e.Agent), Role: cut(e.Role), Shadow: e.Shadow})
}

// outcomeOf is what a decision's result says of its outcome: the decision,
// whether it is allowed, and its reasons' codes (not their messages, which
// may quote what a mask erases); nil for another result, or one that
// cannot be read.
func outcomeOf(result json.RawMessage) json.RawMessage {
	type code struct {
		Code string `json:"code"`
	}
	var d struct {
		Decision string `json:"decision"`
		Allowed  bool   `json:"allowed"`
		Reasons  []code `json:"reasons"`
	}
	if json.Unmarshal(result, &d) != nil || d.Decision == "" {
		return nil
	}
	if d.Reasons == nil {
		d.Reasons = []code{}
	}
	b, err := json.Marshal(d)
	if err != nil || len(b) > maxJSON/2 {
		return nil
	}
	return b
}
