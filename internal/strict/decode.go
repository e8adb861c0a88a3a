package strict

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/BurntSushi/toml"
)

// Doc is a decoded TOML file with the positions of its keys.
type Doc struct {
	File   string
	Values map[string]any
	Pos    Positions
}

// Decode parses src. A syntax error comes back as an Error with its
// position.
func Decode(file string, src []byte) (*Doc, *Error) {
	var values map[string]any
	if _, err := toml.Decode(string(src), &values); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: file, Line: pe.Position.Line, Col: pe.Position.Col, Key: pe.LastKey, Msg: "TOML syntax: " + Clip(pe.Message)}
		}
		return nil, &Error{File: file, Msg: "TOML: " + Clip(err.Error())}
	}
	return &Doc{File: file, Values: values, Pos: KeyPositions(string(src))}, nil
}

// Errorf returns an Error about key (a dotted path) of the document.
func (d *Doc) Errorf(key, format string, args ...any) *Error {
	p := d.Pos.Of(key)
	return &Error{File: d.File, Line: p.Line, Col: p.Col, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Unknown returns the error for a key or section that is not in known,
// with a suggestion when one is close.
func (d *Doc) Unknown(path, key, section string, known []string) *Error {
	if section == "" {
		msg := fmt.Sprintf("unknown section [%s]", Cut(key))
		if s := Suggest(key, known); s != "" {
			msg += fmt.Sprintf(" (did you mean [%s]?)", s)
		}
		return d.Errorf(path, "%s", msg)
	}
	msg := fmt.Sprintf("unknown key %s in [%s]", Quote(key), section)
	if s := Suggest(key, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return d.Errorf(path, "%s", msg)
}

// WantType is the error of a value of the wrong type.
func WantType(want string, got any) error {
	return fmt.Errorf("want %s, got %s", want, TypeName(got))
}

// TypeName names a decoded TOML value's type the way TOML does.
func TypeName(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + Quote(x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Cut returns s, a key or a name from a file shown without quotes, cut
// to MaxQuote bytes with "…" after when it was longer.
func Cut(s string) string { return cut(s, MaxQuote) + ellipsis(s) }

func ellipsis(s string) string {
	if len(s) > MaxQuote {
		return "…"
	}
	return ""
}

// SortedKeys returns the keys of m, sorted.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Micros reads an amount of US dollars (a TOML integer or float) as integer
// micro-dollars, rounded to the nearest; want names the amount in errors.
func Micros(v any, want string, max float64) (int64, error) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, WantType(want, v)
	}
	if math.IsNaN(f) || f < 0 || f > max {
		return 0, fmt.Errorf("%v is out of range: want 0 to %g", f, max)
	}
	return int64(math.Round(f * 1e6)), nil
}
