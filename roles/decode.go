package roles

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentharness/harness/internal/strict"
)

// Error is one problem found in a role file, with its file, line, column
// and key.
type Error = strict.Error

// ErrorList is every problem of one load, sorted by file, line and column.
type ErrorList = strict.ErrorList

// Def is one role file as written: only the keys it sets, each checked and
// converted (max_cost_usd to micro-dollars), before inheritance.
type Def struct {
	Name     string
	Source   Source
	File     string
	Inherits string
	// Values holds every key the file sets, by TOML path: "role.description",
	// "tools.allowed" ([]string), "limits.max_cost_usd" (int64 micro-dollars),
	// "io.<key>" (as decoded).
	Values map[string]any
	doc    *strict.Doc
}

// errAt returns an Error about key in this file.
func (d *Def) errAt(key, format string, args ...any) *Error {
	if d.doc == nil {
		return &Error{File: d.File, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	return d.doc.Errorf(key, format, args...)
}

type kind int

const (
	kString kind = iota
	kBool
	kShellPolicy
	kPatterns
	kCount
	kUSD
	kWarnPercent
	kBlockPercent
)

// schema lists every section and key a role file may hold. [io] is open: its
// keys are carried into the data unchecked, for compatibility.
var schema = map[string]map[string]kind{
	"role": {
		"name": kString, "inherits": kString, "description": kString,
		"shell_policy": kShellPolicy, "privileged": kBool,
	},
	"tools": {"allowed": kPatterns, "denied": kPatterns, "ask": kPatterns},
	"limits": {
		"max_context_tokens": kCount, "max_shell_invocations": kCount, "max_cost_usd": kUSD,
		"warn_at_percent": kWarnPercent, "block_at_percent": kBlockPercent,
	},
	"io": nil,
}

// maxExact is the largest integer that survives a trip through JSON numbers.
const maxExact = 1<<53 - 1

// Parse reads one role file. The role's name is the file's stem; a name key,
// if present, must equal it. Every problem of the file is returned, sorted.
func Parse(file string, src []byte, source Source) (*Def, ErrorList) {
	d := &Def{
		Name:   strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), builtinPrefix), filepath.Ext(file)),
		Source: source,
		File:   file,
		Values: map[string]any{},
	}
	var errs ErrorList
	if err := checkName(d.Name); err != nil {
		errs = append(errs, &Error{File: file, Msg: fmt.Sprintf("file name: %v", err)})
	}
	doc, perr := strict.Decode(file, src)
	if perr != nil {
		return d, append(errs, perr)
	}
	d.doc = doc

	for _, section := range strict.SortedKeys(doc.Values) {
		keys, known := schema[section]
		table, isTable := doc.Values[section].(map[string]any)
		switch {
		case !known:
			errs = append(errs, doc.Unknown(section, section, "", strict.SortedKeys(schema)))
			continue
		case !isTable:
			errs = append(errs, d.errAt(section, "%q must be a table ([%s]), not %s", section, section, strict.TypeName(doc.Values[section])))
			continue
		}
		for _, key := range strict.SortedKeys(table) {
			path := section + "." + key
			if keys == nil { // [io]: carried as is
				d.Values[path] = table[key]
				continue
			}
			k, ok := keys[key]
			if !ok {
				errs = append(errs, doc.Unknown(path, key, section, strict.SortedKeys(keys)))
				continue
			}
			v, err := convert(k, table[key])
			if err != nil {
				errs = append(errs, d.errAt(path, "%s: %v", path, err))
				continue
			}
			d.Values[path] = v
		}
	}

	if name, ok := d.Values["role.name"].(string); ok {
		if err := checkName(name); err != nil {
			errs = append(errs, d.errAt("role.name", "role.name: %v", err))
		} else if name != d.Name {
			errs = append(errs, d.errAt("role.name", "role.name %q does not match the file name %q (a role is named by its file)", name, d.Name))
		}
		delete(d.Values, "role.name")
	}
	if parent, ok := d.Values["role.inherits"].(string); ok {
		if err := checkName(parent); err != nil {
			errs = append(errs, d.errAt("role.inherits", "role.inherits: %v", err))
		} else {
			d.Inherits = parent
		}
		delete(d.Values, "role.inherits")
	}
	return d, errs.Sort()
}

// convert checks a decoded TOML value against the kind of its key.
func convert(k kind, v any) (any, error) {
	switch k {
	case kString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, strict.WantType("a string", v)
	case kBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, strict.WantType("true or false", v)
	case kShellPolicy:
		s, ok := v.(string)
		if !ok {
			return nil, strict.WantType(`"track", "compress" or "deny"`, v)
		}
		switch p := ShellPolicy(s); p {
		case ShellTrack, ShellCompress, ShellDeny:
			return p, nil
		}
		return nil, fmt.Errorf("unknown shell_policy %s: want \"track\", \"compress\" or \"deny\"", strict.Quote(s))
	case kPatterns:
		list, ok := v.([]any)
		if !ok {
			return nil, strict.WantType("an array of tool names or patterns", v)
		}
		out := make([]string, 0, len(list))
		for i, item := range list {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("item %d: %w", i+1, strict.WantType("a string", item))
			}
			if !ValidPattern(s) {
				return nil, fmt.Errorf("item %d: %s is not a tool name or pattern (no spaces, control or format characters; '*' is the wildcard)", i+1, strict.Quote(s))
			}
			out = append(out, s)
		}
		return out, nil
	case kCount:
		n, ok := v.(int64)
		if !ok {
			return nil, strict.WantType("a whole number", v)
		}
		if n < 0 || n > maxExact {
			return nil, fmt.Errorf("%d is out of range: want 0 to %d", n, int64(maxExact))
		}
		return n, nil
	case kUSD:
		micros, err := strict.Micros(v, "an amount in US dollars", 1e9)
		if err != nil {
			return nil, err
		}
		return micros, nil
	case kWarnPercent:
		n, ok := v.(int64)
		if !ok {
			return nil, strict.WantType("a whole percentage", v)
		}
		if n < 0 || n > 100 {
			return nil, fmt.Errorf("%d is out of range: want 0 to 100", n)
		}
		return n, nil
	case kBlockPercent:
		n, ok := v.(int64)
		if !ok {
			return nil, strict.WantType("a whole percentage", v)
		}
		if (n < 1 || n > 100) && n != NeverBlock {
			return nil, fmt.Errorf("%d is out of range: want 1 to 100, or %d to never block", n, NeverBlock)
		}
		return n, nil
	}
	return nil, fmt.Errorf("internal: unknown kind %d", k)
}
