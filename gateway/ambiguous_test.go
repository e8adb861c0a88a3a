package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestAmbiguity(t *testing.T) {
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < 100; i++ {
			b.WriteString(`"k` + itoa(i) + `":` + itoa(i) + ",")
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
		{"keys that differ by case", `{"path":1,"Path":2,"PATH":3}`, ""},
		{"keys that differ by one escape", `{"a\"":1,"a\\":2,"a":3}`, ""},
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
		{"bytes not UTF-8", "{\"s\":\"a\xffb\"}", "not UTF-8"},
		{"a key not UTF-8", "{\"\xc0\xaf\":1}", "not UTF-8"},
		{"a high surrogate alone", `{"s":"a\ud800b"}`, `\ud800, half of a UTF-16 surrogate pair`},
		{"a high surrogate at the end", `{"s":"\uD83D"}`, `\ud83d, half`},
		{"a low surrogate alone", `{"s":"\udc00"}`, `\udc00, half`},
		{"two high surrogates", `{"s":"\ud83d\ud83d"}`, `\ud83d, half`},
		{"a high surrogate and another escape", `{"s":"\ud83d\n"}`, `\ud83d, half`},
		{"a lone surrogate in a key", `{"\udfff":1}`, `\udfff, half`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.raw)) {
				t.Fatalf("not JSON: %s", tt.raw)
			}
			err := ambiguity([]byte(tt.raw))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ambiguous: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("not ambiguous, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("got %q, want %q in it", err, tt.want)
			}
			// The gateway's decoding of a call's arguments refuses the same.
			if _, err := arguments(json.RawMessage(tt.raw)); (err != nil) != (tt.want != "") {
				t.Errorf("arguments: %v", err)
			}
		})
	}
}

// FuzzAmbiguity holds ambiguity to a reference built on encoding/json's
// tokens: on JSON that escapes no surrogate, it finds an ambiguity
// exactly when the text is not UTF-8 or an object has a key twice.
func FuzzAmbiguity(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1}]},"b":1}`, `{"p\u0061":1,"pa":2}`, `[{"a":1},{"a":1}]`,
		`{"s":"\ud800"}`, "{\"\xff\":1}", `{"a\"b":1,"a\\b":2}`, `"x"`, `[]`, `{"":{"":{"":1}}}`} {
		f.Add([]byte(s))
	}
	surrogate := regexp.MustCompile(`\\u[dD][89a-fA-F]`)
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		err := ambiguity(b)
		if surrogate.Match(b) {
			return // held by TestAmbiguity's cases: encoding/json reads them all as U+FFFD
		}
		dup := duplicateKey(t, b)
		if want := dup || !utf8Valid(b); (err != nil) != want {
			t.Fatalf("ambiguity %v, want an ambiguity %v (a key twice %v): %q", err, want, dup, b)
		}
	})
}

func utf8Valid(b []byte) bool { return strings.ToValidUTF8(string(b), "\x00x") == string(b) }

// duplicateKey reports whether an object of the JSON text b has a key
// twice, as encoding/json's tokens read the keys.
func duplicateKey(t *testing.T, b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []map[string]bool // nil for an array
	wantKey := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("%v: %q", err, b)
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, map[string]bool{})
			case '[':
				stack = append(stack, nil)
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if wantKey = len(stack) > 0 && stack[len(stack)-1] != nil && !wantKey; wantKey {
				// A string in an object is a key, then a value.
				if stack[len(stack)-1][tok] {
					return true
				}
				stack[len(stack)-1][tok] = true
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			wantKey = false
		}
	}
}

// An agent's arguments that another parser could read otherwise than the
// policy does never reach the upstream: with a key twice, an upstream
// that reads the first (gjson, many streaming parsers) would run what the
// policy did not decide. The call is refused as invalid params; the same
// call written once runs.
func TestAttackArgumentsReadTwoWays(t *testing.T) {
	t.Parallel()
	b := newBench(t, smallRole(1000000))
	a := stdioAgent(t, b.gateway(t, PrefixNever, rawUpstreamConfig(t, "raw")), Identity{Agent: "a", Session: "s", StartRole: "small"})
	a.initialize(nil)
	dir := t.TempDir()
	first, last := filepath.Join(dir, "first"), filepath.Join(dir, "last")
	q := func(s string) string { return string(mustJSON(s)) }
	for _, tt := range []struct{ name, args string }{
		{"a key twice", `{"touch":` + q(first) + `,"touch":` + q(last) + `}`},
		{"a key twice, once escaped", `{"touch":` + q(first) + `,"t\u006fuch":` + q(last) + `}`},
		{"a key twice, nested", `{"touch":` + q(last) + `,"notify":[{"a":1,"a":2}]}`},
		{"a lone surrogate", `{"touch":` + q(last) + `,"x":"\udc00"}`},
		{"bytes not UTF-8", `{"touch":` + q(last) + ",\"x\":\"\xff\"}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := strings.TrimSuffix(tt.args, "}") + `,"result":{"content":[]}}`
			m := a.await(a.request("tools/call", json.RawMessage(`{"name":"raw","arguments":`+args+`}`)))
			if m.Error == nil || m.Error.Code != codeInvalidParams {
				t.Fatalf("not refused as invalid params: %+v", m)
			}
			for _, f := range []string{first, last} {
				if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the upstream ran the call (%s: %v)", f, err)
				}
			}
		})
	}
	a.tool("raw", map[string]any{"touch": last, "result": map[string]any{"content": []any{}}})
	if _, err := os.Stat(last); err != nil {
		t.Fatalf("the same call with each key once did not run: %v", err)
	}
}
