package ijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

func TestAmbiguity(t *testing.T) {
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < 100; i++ {
			b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i) + ",")
		}
		if dup {
			b.WriteString(`"k57":0,`)
		}
		b.WriteString(`"end":true}`)
		return b.String()
	}
	for _, tt := range []struct {
		name, raw string
		want      string // in the error; "" for none
	}{
		{"an object", `{"path":"a.md","mode":1}`, ""},
		{"not an object", `"x"`, ""},
		{"empty", `{}`, ""},
		{"one key in two objects", `{"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]}`, ""},
		{"a value that is a key's name", `{"a":"a","b":["a","a"]}`, ""},
		{"keys that differ by one escape", `{"a\"":1,"a\\":2,"a":3}`, ""},
		{"keys that differ in a letter", `{"path":1,"paths":2,"pat":3,"bath":4}`, ""},
		{"proto without its underscores", `{"__proto":1,"proto__":2,"_proto_":3,"__PROTO__":4}`, ""},
		{"numbers a double holds", `[0,-0,0.0,1,-1,0.1,1.5E+2,1e308,-1e308,1.7976931348623157e308,1e-307,-1.2345678901234568e-300,9007199254740992,0.30000000000000004,1e20,100000000000000000000,0e9999999999,1.0000000000000000000000000000000000000000000000000000000000000000000,1e0000001,6.02214076e23,18446744073709552000]`, ""},
		{"a double's digits far from the point", `[0.0000000000000000000000000000000000000000000000000000000000000000001234567890123456,1234567890123456000000000000000000000000000000000000000000000000000000000000000000]`, ""},
		{"a surrogate pair", `{"s":"\ud83d\ude00","\uD83D\uDE00":1}`, ""},
		{"an escaped backslash before u", `{"s":"\\ud800"}`, ""},
		{"U+FFFD itself", "{\"s\":\"\ufffd\",\"t\":\"\\ufffd\"}", ""},
		{"many keys", many(false), ""},
		{"a key twice", `{"path":"notes.md","path":".lean-ctx/roles/x.toml"}`, `the key "path" is given twice`},
		{"a key twice, nested", `{"a":[1,{"b":{"c":1,"d":2,"c":3}}]}`, `the key "c" is given twice`},
		{"a key twice, one escaped", `{"path":1,"p\u0061th":2}`, `the key "path" is given twice`},
		{"a key twice, both escaped", `{"\u0070":1,"\u0070":2}`, `the key "p" is given twice`},
		{"a key twice after a nested object", `{"a":1,"b":{"a":2},"a":3}`, `the key "a" is given twice`},
		{"the empty key twice", `{"":1,"":2}`, `the key "" is given twice`},
		{"a key twice among many", many(true), `the key "k57" is given twice`},
		{"keys in another case", `{"path":1,"Path":2}`, `the keys "path" and "Path" of one object differ only in case`},
		{"keys in capitals", `{"a":{"PATH":1,"path":2}}`, `the keys "PATH" and "path"`},
		{"keys in another case, one escaped", `{"path":1,"P\u0061th":2}`, `the keys "path" and "Path"`},
		{"a Kelvin sign for a k", "{\"k\":1,\"\u212a\":2}", "differ only in case"},
		{"a long s for an s", `{"keys":1,"Key\u017f":2}`, "differ only in case"},
		{"a dotless i, which upper-cases to I", `{"file":1,"f\u0131le":2}`, "differ only in case"},
		{"a sharp s, which upper-cases to SS", `{"class":1,"cla\u00df":2}`, "differ only in case"},
		{"a ligature fi, which upper-cases to FI", `{"file_path":1,"\ufb01le_path":2}`, "differ only in case"},
		{"keys of other letters", `{"f\u0131le":1,"f\u00efle":2,"\u00df":3,"s":4}`, ""},
		{"keys in another case among many", strings.Replace(many(false), `"k99"`, `"K57"`, 1), `the keys "k57" and "K57"`},
		{"__proto__", `{"__proto__":{"path":"x"}}`, `the key "__proto__" is refused`},
		{"__proto__ nested and escaped", `{"a":[{"__pr\u006fto__":1}]}`, `the key "__proto__" is refused`},
		{"a number past a double's precision", `{"pid":1.0000000000000001}`, "the number 1.0000000000000001 is more precise than a double"},
		{"an integer past a double's", `{"n":9007199254740993}`, "the number 9007199254740993"},
		{"an integer of 18 digits", `{"n":[123456789012345678]}`, "the number 123456789012345678"},
		{"a number past a double", `{"n":1e400}`, "the number 1e400"},
		{"a negative number past a double", `{"n":-1.5e309}`, "the number -1.5e309"},
		{"a number below a double", `{"n":1e-400}`, "the number 1e-400"},
		{"a subnormal", `{"n":5e-324}`, "the number 5e-324"},
		{"the least normal double", `{"n":2.2250738585072014e-308}`, "the number 2.2250738585072014e-308"},
		{"a number just past a double", `{"n":1.7976931348623159e308}`, "the number 1.7976931348623159e308"},
		{"not the shortest writing of its double", `{"n":0.10000000000000001}`, "the number 0.10000000000000001"},
		{"a long number whose digits and exponent meet", `{"n":0.` + strings.Repeat("0", 9999999) + `9007199254740993e10000015}`, "the number 0.000"},
		{"a long 1e400", `{"n":0.` + strings.Repeat("0", 9999999) + `1e10000400}`, "the number 0.000"},
		{"a long 1e-400", `{"n":1` + strings.Repeat("0", 9999999) + `e-10000399}`, "the number 1000"},
		{"an exponent of many digits", `{"n":1e99999999999999999999}`, "more precise than a double, or beyond one"},
		{"a number's digits far from the point", `{"n":0.00000000000000000000000000000000000000000000000000000000000000000012345678901234567}`, "more precise than a double"},
		{"bytes not UTF-8", "{\"s\":\"a\xffb\"}", "not UTF-8"},
		{"a key not UTF-8", "{\"\xc0\xaf\":1}", "not UTF-8"},
		{"a high surrogate alone", `{"s":"a\ud800b"}`, `\ud800, half of a UTF-16 surrogate pair`},
		{"a high surrogate at the end", `{"s":"\uD83D"}`, `\ud83d, half`},
		{"a low surrogate alone", `{"s":"\udc00"}`, `\udc00, half`},
		{"two high surrogates", `{"s":"\ud83d\ud83d"}`, `\ud83d, half`},
		{"a high surrogate and another escape", `{"s":"\ud83d\n"}`, `\ud83d, half`},
		{"a lone surrogate in a key", `{"\udfff":1}`, `\udfff, half`},
		{"a NUL", `{"path":"/etc/passwd\u0000.md"}`, `a string holds \u0000`},
		{"a NUL in a key", `{"a\u0000b":1}`, `a string holds \u0000`},
		{"an escaped backslash before u0000", `{"s":"\\u0000"}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.raw)) {
				t.Fatalf("not JSON: %s", tt.raw)
			}
			err := Ambiguity([]byte(tt.raw))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ambiguous: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("not ambiguous, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("got %q, want %q in it", err, tt.want)
			}
		})
	}
}

// FuzzAmbiguity holds Ambiguity to a reference built on encoding/json's
// tokens: on JSON that escapes no surrogate, it finds an ambiguity
// exactly when the text is not UTF-8, an object has two keys equal but
// for case, a key is "__proto__", or a number is not the value of its
// nearest double written shortest.
func FuzzAmbiguity(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1}]},"b":1}`, `{"p\u0061":1,"pa":2}`, `[{"a":1},{"a":1}]`,
		`{"s":"\ud800"}`, "{\"\xff\":1}", `{"a\"b":1,"a\\b":2}`, `"x"`, `[]`, `{"":{"":{"":1}}}`, `{"k":1,"K":2}`,
		`{"__proto__":1}`, `[1.0000000000000001,0.1,1e400,9007199254740993,5e-324,1e-307,1.7976931348623157e308]`} {
		f.Add([]byte(s))
	}
	surrogate := regexp.MustCompile(`\\u([dD][89a-fA-F]|0000)`)
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		err := Ambiguity(b)
		if surrogate.Match(b) {
			return // held by TestAmbiguity's cases: encoding/json reads them all as U+FFFD, and \u0000 as itself
		}
		why := readsTwoWays(t, b)
		if !utf8.Valid(b) {
			why = "not UTF-8"
		}
		if (err != nil) != (why != "") {
			t.Fatalf("ambiguity %v, want an ambiguity: %q: %q", err, why, b)
		}
	})
}

// readsTwoWays says what in the JSON text b another parser could read
// otherwise than encoding/json, as encoding/json's tokens read it: two
// keys of an object equal but for case, a key "__proto__", a number not
// the value of its nearest double written shortest; "" for none.
func readsTwoWays(t *testing.T, b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack [][]string // an object's keys; nil for an array
	inObject := []bool{}
	wantKey := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			t.Fatalf("%v: %q", err, b)
		}
		object := len(inObject) > 0 && inObject[len(inObject)-1]
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				stack, inObject = append(stack, nil), append(inObject, tok == '{')
				wantKey = tok == '{'
				continue
			default:
				stack, inObject = stack[:len(stack)-1], inObject[:len(inObject)-1]
			}
		case string:
			if object && wantKey {
				if tok == "__proto__" {
					return "__proto__"
				}
				for _, k := range stack[len(stack)-1] {
					if strings.EqualFold(k, tok) || KeyForm([]byte(k)) == KeyForm([]byte(tok)) {
						return "keys " + k + " and " + tok
					}
				}
				stack[len(stack)-1] = append(stack[len(stack)-1], tok)
				wantKey = false
				continue
			}
		case json.Number:
			if !nearestDouble(string(tok)) {
				return "the number " + string(tok)
			}
		}
		// A value ends: in an object, a key comes next.
		wantKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

// foldCase(x) == foldCase(y) exactly when bytes.EqualFold(x, y): the keys
// encoding/json takes for one struct field.
func FuzzFoldCase(f *testing.F) {
	for _, p := range [][2]string{{"path", "PATH"}, {"k", "\u212a"}, {"s", "\u017f"}, {"ß", "ẞ"}, {"σ", "ς"}, {"Ǆ", "ǅ"}, {"a", "b"}, {"", ""}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		if !utf8.ValidString(x) || !utf8.ValidString(y) {
			return // keys are UTF-8: Ambiguity refuses the others first
		}
		if got, want := foldCase([]byte(x)) == foldCase([]byte(y)), bytes.EqualFold([]byte(x), []byte(y)); got != want {
			t.Fatalf("%q, %q: one key %v, bytes.EqualFold %v", x, y, got, want)
		}
	})
}

// nearestDouble reports whether the JSON number n is exactly the nearest
// double to it written shortest, by parsing both as rationals (a number
// with an exponent of more than four digits is zero or far beyond a
// double, whose rational is not worth making).
func nearestDouble(n string) bool {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil || f != 0 && math.Abs(f) < 1e-307 {
		return false // past a double, or refused near its subnormals
	}
	mantissa, exp, _ := strings.Cut(strings.ToLower(n), "e")
	if len(strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")) > 4 {
		return strings.Trim(mantissa, "-0.") == ""
	}
	var exact, near big.Rat
	exact.SetString(n)
	near.SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return exact.Cmp(&near) == 0
}

// BenchmarkAmbiguity checks a megabyte of arguments of one kind, with
// encoding/json decoding the same bytes (UseNumber, as the policy reads
// them) as the reference: numbers near the ends of a double's range and
// of 16–17 digits (which take the slow path), and short keys.
func BenchmarkAmbiguity(b *testing.B) {
	array := func(elem string) []byte {
		n := (1 << 20) / (len(elem) + 1)
		return []byte(`{"x":[` + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + `]}`)
	}
	keys := func() []byte {
		var sb strings.Builder
		sb.WriteString("{")
		for i := 0; sb.Len() < 1<<20; i++ {
			sb.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
		}
		return []byte(strings.TrimSuffix(sb.String(), ",") + "}")
	}
	for _, c := range []struct {
		name string
		in   []byte
		want bool // ambiguous
	}{
		{"small-integers", array("1"), false},
		{"1e-310", array("1e-310"), true},
		{"1e308", array("1e308"), false},
		{"17-digits", array("0.30000000000000004"), false},
		{"near-least-normal", array("2.225073858507201e-308"), true},
		{"keys", keys(), false},
	} {
		for _, check := range []bool{false, true} {
			name := c.name + "/decode"
			if check {
				name = c.name + "/ambiguity"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(c.in)))
				for b.Loop() {
					if check {
						if err := Ambiguity(c.in); (err != nil) != c.want {
							b.Fatal(err)
						}
						continue
					}
					dec := json.NewDecoder(bytes.NewReader(c.in))
					dec.UseNumber()
					var v any
					if err := dec.Decode(&v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// KeyForm equates what bytes.EqualFold does, and what upper-casing whole
// strings by Unicode's full mappings does (JavaScript's toUpperCase).
func FuzzKeyForm(f *testing.F) {
	for _, p := range [][2]string{{"path", "PATH"}, {"k", "\u212a"}, {"class", "cla\u00df"}, {"file", "f\u0131le"}, {"fi", "\ufb01"}, {"\u03c3", "\u03c2"}, {"a", "b"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		if !utf8.ValidString(x) || !utf8.ValidString(y) {
			return
		}
		same := KeyForm([]byte(x)) == KeyForm([]byte(y))
		if bytes.EqualFold([]byte(x), []byte(y)) && !same {
			t.Fatalf("%q, %q: equal to bytes.EqualFold, not to KeyForm", x, y)
		}
		if upper := cases.Upper(language.Und); upper.String(x) == cases.Upper(language.Und).String(y) && !same {
			t.Fatalf("%q, %q: equal upper-cased, not to KeyForm", x, y)
		}
	})
}
