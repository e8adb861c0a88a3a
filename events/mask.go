package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/agentharness/harness/contract"
)

// Masked replaces a masked value wherever a decision's messages or events
// would quote it, and a masked string field of the result or of an event.
const Masked = "[masked]"

// Withheld replaces a message that could not be searched for masked values
// within the bound of one decision (maxSearch): it is left out rather than
// written unsearched.
const Withheld = "[withheld: too long to search for masked values]"

// maxSearch bounds the bytes of text one decision's redaction searches,
// summed over its masked values, so that a policy's messages and an
// agent's arguments cannot make writing a log entry slow.
const maxSearch = 64 << 20

// minNumber is the shortest JSON text of a masked number that is redacted
// from messages: a shorter number (a count, a flag) is no secret worth
// garbling every figure of a message for.
const minNumber = 4

// Mask is the compiled [log] mask: input paths, as JSON pointers, whose
// values are kept out of the logs. A key matches whatever its case
// ("/arguments/password" masks Password and PASSWORD); a "*" segment
// matches every key. A nil Mask masks nothing.
type Mask struct {
	paths [][]string
	rules []string // each path as written
}

// NewMask compiles JSON pointers ("/arguments/password",
// "/arguments/env/*").
func NewMask(pointers []string) (*Mask, error) {
	m := &Mask{}
	for _, p := range pointers {
		parts, err := ParsePointer(p)
		if err != nil {
			return nil, err
		}
		m.paths = append(m.paths, parts)
		m.rules = append(m.rules, p)
	}
	return m, nil
}

// pointerEscaper writes a key as a JSON pointer's segment (RFC 6901), and
// pointerUnescaper reads one back.
var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// ParsePointer splits a JSON pointer into its keys.
func ParsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' || p == "/" {
		return nil, fmt.Errorf("mask %q: want a JSON pointer such as /arguments/password", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("mask %q: empty segment", p)
		}
		parts[i] = pointerUnescaper.Replace(s)
	}
	return parts, nil
}

// splitPointer is the keys of p, a pointer that erase wrote: unlike a
// mask's, one of its keys may be empty (an agent's argument named "",
// which a star matches).
func splitPointer(p string) []string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = pointerUnescaper.Replace(s)
	}
	return parts
}

// Redaction is what the masks selected in one decision's input, for
// everything that decision writes: the input with the masked paths erased,
// those paths, and the values they held, which are replaced by Masked in
// the decision's messages (its result's reasons and warnings) and in the
// events it causes. Fields of the result and of events that carry a
// masked top-level input field (tool, role, session, agent; from, to, by
// for a switch) are masked too. Other parts of the input are not searched:
// a value the agent also put in an unmasked argument stays there, and an
// agent cannot blind the log of its own command by choosing a masked value
// that occurs in it. A policy that transforms a value before quoting it
// (upper-cases it, cuts it) escapes the search.
//
// A Redaction is safe for concurrent use.
type Redaction struct {
	in    any // the input, not yet marshalled (no masks)
	input json.RawMessage
	// erased are the input paths erased, each key as the input has it
	// (the masks match keys whatever their case, and "*" every key).
	erased []string
	// rules are the masks that erased something, as OPA's decision log
	// records its own: /input and the rule as written.
	rules []string
	// fields are the erased top-level keys of the input.
	fields map[string]bool
	// values are the masked values as text may quote them, longest first.
	values []string
	// failed: the input could not be read, so no message can be trusted.
	failed bool
	search atomic.Int64 // bytes left to search
}

// Apply returns the redaction of the decision whose input is input. On an
// error (an input that cannot be marshalled), the redaction it returns
// logs no input and withholds every message.
func (m *Mask) Apply(input any) (*Redaction, error) {
	if m == nil || len(m.paths) == 0 {
		return &Redaction{in: input}, nil
	}
	r := &Redaction{}
	b, err := marshalInput(input)
	if err == nil {
		var doc any
		if doc, err = decode(b); err == nil {
			var found []any
			for i, p := range m.paths {
				n := len(r.erased)
				erase(doc, p, "", &r.erased, &found)
				if rule := "/input" + m.rules[i]; len(r.erased) > n && !slices.Contains(r.rules, rule) {
					r.rules = append(r.rules, rule)
				}
			}
			eraseResolved(doc, &r.erased, &r.rules, &found)
			r.input = b
			if len(r.erased) > 0 {
				r.input, err = json.Marshal(doc)
				slices.Sort(r.erased)
				slices.Sort(r.rules)
				r.fields = map[string]bool{}
				for _, p := range r.erased {
					parts := splitPointer(p)
					r.fields[parts[0]] = true
				}
				seen := map[string]bool{}
				for _, v := range found {
					collect(v, seen)
				}
				r.values = slices.Collect(func(yield func(string) bool) {
					for v := range seen {
						if !yield(v) {
							return
						}
					}
				})
				slices.SortFunc(r.values, func(a, b string) int {
					if len(a) != len(b) {
						return len(b) - len(a)
					}
					return strings.Compare(a, b)
				})
			}
		}
	}
	if err != nil {
		return &Redaction{input: json.RawMessage("null"), failed: true}, err
	}
	r.search.Store(maxSearch)
	return r, nil
}

// eraseResolved erases from the input's resolved paths
// (contract.Input.Resolved) the entries of the path arguments a mask
// erased: an entry's key is the argument as written and its values where
// it leads, which the mask means to keep out of the log as well. The
// entries of the arguments kept stay.
func eraseResolved(doc any, erased, rules *[]string, found *[]any) {
	obj, _ := doc.(map[string]any)
	resolved, _ := obj["resolved"].(map[string]any)
	if len(resolved) == 0 || len(*found) == 0 {
		return
	}
	masked := map[string]bool{}
	var strs func(v any)
	strs = func(v any) {
		switch v := v.(type) {
		case string:
			masked[v] = true
		case map[string]any:
			for _, x := range v {
				strs(x)
			}
		case []any:
			for _, x := range v {
				strs(x)
			}
		}
	}
	for _, v := range *found {
		strs(v)
	}
	keys := make([]string, 0, len(resolved))
	for k := range resolved {
		if masked[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		*found = append(*found, resolved[k])
		delete(resolved, k)
		*erased = append(*erased, "/resolved/"+pointerEscaper.Replace(k))
	}
	if len(keys) > 0 && !slices.Contains(*rules, "/input/resolved") {
		*rules = append(*rules, "/input/resolved")
	}
	if len(resolved) == 0 {
		delete(obj, "resolved")
	}
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	return doc, err
}

// erase deletes from v the keys at path (matching keys whatever their
// case), appending each erased path to erased and its value to found.
func erase(v any, path []string, at string, erased *[]string, found *[]any) {
	obj, ok := v.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	var keys []string
	for k := range obj {
		if path[0] == "*" || strings.EqualFold(k, path[0]) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		child := obj[k]
		p := at + "/" + pointerEscaper.Replace(k)
		if len(path) == 1 {
			delete(obj, k)
			*erased = append(*erased, p)
			*found = append(*found, child)
			continue
		}
		erase(child, path[1:], p, erased, found)
	}
}

// collect adds the texts by which a masked value may appear in a message:
// a string as it is and as JSON or Go would quote it (a policy's
// sprintf("%v") of an object quotes its strings); a number of minNumber
// characters or more; the strings and numbers inside an object or an
// array (their keys are structure, not values). Booleans and null are
// never redacted: their text is in every message.
func collect(v any, seen map[string]bool) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return
		}
		seen[x] = true
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(x)
		html, _ := json.Marshal(x)
		for _, q := range []string{strings.TrimSpace(b.String()), string(html), strconv.Quote(x)} {
			seen[q[1:len(q)-1]] = true
		}
	case json.Number:
		if len(x) >= minNumber {
			seen[string(x)] = true
		}
	case map[string]any:
		for _, c := range x {
			collect(c, seen)
		}
	case []any:
		for _, c := range x {
			collect(c, seen)
		}
	}
}

// Input is the decision's input as JSON, masked.
func (r *Redaction) Input() (json.RawMessage, error) {
	if r == nil {
		return json.RawMessage("null"), nil
	}
	if r.input != nil {
		return r.input, nil
	}
	return marshalInput(r.in)
}

// Erased are the masks that erased something from the input, as OPA's
// decision log records its own: JSON pointers rooted at the input document
// (/input/arguments/password), each rule as written, once, sorted. (OPA
// names the rule, not the keys it removed; a rule's "*" and its matching
// of keys whatever their case are the harness's.)
func (r *Redaction) Erased() []string {
	if r == nil {
		return nil
	}
	return r.rules
}

// masks reports whether anything is to be masked.
func (r *Redaction) masks() bool { return r != nil && (r.failed || len(r.erased) > 0) }

// Text returns s with every masked value it quotes replaced by Masked
// (overlapping occurrences become one), or Withheld when it cannot be
// searched within the decision's bound.
func (r *Redaction) Text(s string) string {
	if r == nil {
		return s
	}
	if r.failed && s != "" {
		return Withheld
	}
	if len(r.values) == 0 || s == "" {
		return s
	}
	var spans [][2]int
	for _, v := range r.values {
		if len(v) > len(s) {
			continue
		}
		for i := 0; i <= len(s)-len(v); {
			j := strings.Index(s[i:], v)
			n := len(s) - i
			if j >= 0 {
				n = j + len(v)
			}
			if r.search.Add(-int64(n)) < 0 {
				return Withheld
			}
			if j < 0 {
				break
			}
			spans = append(spans, [2]int{i + j, i + j + len(v)})
			i += j + 1
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	last := 0
	for k := 0; k < len(spans); {
		start, end := spans[k][0], spans[k][1]
		for k++; k < len(spans) && spans[k][0] < end; k++ {
			end = max(end, spans[k][1])
		}
		out.WriteString(s[last:start])
		out.WriteString(Masked)
		last = end
	}
	out.WriteString(s[last:])
	return out.String()
}

// reasons returns reasons with their messages redacted (codes, policies
// and rules are the policy's own words, not the input's).
func (r *Redaction) reasons(reasons []contract.Reason) []contract.Reason {
	if !r.masks() || len(reasons) == 0 {
		return reasons
	}
	out := slices.Clone(reasons)
	for i := range out {
		out[i].Message = r.Text(out[i].Message)
	}
	return out
}

// Result marshals a decision's result, masked: the string fields that
// carry an erased input path (tool, role; from and to for a switch) are
// Masked, other values at erased paths are left out, and the messages of
// its reasons and warnings are redacted.
func (r *Redaction) Result(result any) (json.RawMessage, error) {
	b, _, _, err := r.MaskResult(result)
	return b, err
}

// MaskResult is Result, with the paths of the result it left out (erased)
// and those whose value it replaced by Masked (masked), as JSON pointers
// rooted at the result (/result/tool, /result/reasons/0/message), sorted:
// what OPA's decision log records of its own masks.
func (r *Redaction) MaskResult(result any) (b json.RawMessage, erased, masked []string, err error) {
	b, err = json.Marshal(result)
	if err != nil || !r.masks() {
		return b, nil, nil, err
	}
	doc, err := decode(b)
	if err != nil {
		return nil, nil, nil, err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return b, nil, nil, nil
	}
	for _, p := range r.erased {
		parts := splitPointer(p)
		switch maskAt(obj, parts) {
		case 'm':
			masked = append(masked, "/result"+p)
		case 'e':
			erased = append(erased, "/result"+p)
		}
	}
	for _, key := range []string{"reasons", "warnings"} {
		list, _ := obj[key].([]any)
		for i, item := range list {
			if m, ok := item.(map[string]any); ok {
				if s, ok := m["message"].(string); ok {
					if m["message"] = r.Text(s); m["message"] != s {
						masked = append(masked, fmt.Sprintf("/result/%s/%d/message", key, i))
					}
				}
			}
		}
	}
	slices.Sort(erased)
	slices.Sort(masked)
	b, err = json.Marshal(obj)
	return b, slices.Compact(erased), slices.Compact(masked), err
}

// maskAt masks the value at path exactly, if there is one: a string by
// Masked ('m'), anything else by leaving it out ('e'); 0 when there is
// none.
func maskAt(obj map[string]any, path []string) byte {
	for len(path) > 1 {
		next, ok := obj[path[0]].(map[string]any)
		if !ok {
			return 0
		}
		obj, path = next, path[1:]
	}
	v, ok := obj[path[0]]
	switch {
	case !ok:
		return 0
	case v == Masked:
		return 'm'
	}
	if _, ok := v.(string); ok {
		obj[path[0]] = Masked
		return 'm'
	}
	delete(obj, path[0])
	return 'e'
}

// Event returns e as the decision may write it: the fields that carry a
// masked input field (session, agent, role, tool; from, to, by) Masked,
// and the reason and messages of a violation redacted. e itself is not
// changed.
func (r *Redaction) Event(e Event) Event {
	if !r.masks() {
		return e
	}
	field := func(key string, s *string) {
		if *s != "" && (r.failed || r.fields[key]) {
			*s = Masked
		}
	}
	field("session", &e.Session)
	field("agent", &e.Agent)
	field("role", &e.Role)
	if e.Violation != nil {
		v := *e.Violation
		field("tool", &v.Tool)
		v.Reason = r.Text(v.Reason)
		v.Reasons = r.reasons(v.Reasons)
		e.Violation = &v
	}
	if e.Switch != nil {
		s := *e.Switch
		field("from", &s.From)
		field("to", &s.To)
		field("by", &s.By)
		e.Switch = &s
	}
	return e
}
