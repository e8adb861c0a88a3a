package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The single-pass reader agrees with encoding/json on every valid JSON
// document: an object's members by key (of a key given twice, the last),
// an array's elements, a string's value.
func FuzzRawJSON(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"a\"b\\c\u00e9"}],"isError":false}`,
		`{"a":1,"a":2," a":{"b":[1,2,{"c":"]}"}]},"\u0074ext":"x","Text":"y"}`,
		` { "k" : [ ] , "l" : { } , "m" : null , "n" : -1.5e3 , "o" : true } `,
		`["x",{"y":"z"},[[]],"\ud83d\ude00","\ud800"]`,
		`"te\u0000xt"`, `"\xff\xfe"`, `null`, `{}`, `[]`, `"a"`, `12`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			objectMembers(raw) // anything, but no panic
			arrayElements(raw)
			stringValue(raw)
			return
		}
		var wantObj map[string]json.RawMessage
		objErr := json.Unmarshal(raw, &wantObj)
		gotObj, err := objectMembers(raw)
		if (err == nil) != (objErr == nil) {
			t.Fatalf("object %q: error %v, encoding/json's %v", raw, err, objErr)
		}
		if len(gotObj) != len(wantObj) || (gotObj == nil) != (wantObj == nil) {
			t.Fatalf("object %q: %d members, encoding/json %d", raw, len(gotObj), len(wantObj))
		}
		for k, v := range wantObj {
			if !bytes.Equal(bytes.TrimSpace(gotObj[k]), bytes.TrimSpace(v)) {
				t.Fatalf("object %q, key %q: %q, encoding/json %q", raw, k, gotObj[k], v)
			}
		}
		var wantArr []json.RawMessage
		arrErr := json.Unmarshal(raw, &wantArr)
		gotArr, err := arrayElements(raw)
		if (err == nil) != (arrErr == nil) {
			t.Fatalf("array %q: error %v, encoding/json's %v", raw, err, arrErr)
		}
		if len(gotArr) != len(wantArr) {
			t.Fatalf("array %q: %d elements, encoding/json %d", raw, len(gotArr), len(wantArr))
		}
		for i := range wantArr {
			if !bytes.Equal(bytes.TrimSpace(gotArr[i]), bytes.TrimSpace(wantArr[i])) {
				t.Fatalf("array %q, element %d: %q, encoding/json %q", raw, i, gotArr[i], wantArr[i])
			}
		}
		var wantStr string
		if json.Unmarshal(raw, &wantStr) != nil {
			wantStr = ""
		}
		if got := stringValue(raw); got != wantStr {
			t.Fatalf("string %q: %q, encoding/json %q", raw, got, wantStr)
		}
	})
}

// FuzzUnquote holds the decoding of JSON strings equal to encoding/json's
// on strings of every kind: escapes of every sort, surrogates paired and
// not, invalid UTF-8, long runs between escapes.
func FuzzUnquote(f *testing.F) {
	for _, seed := range []string{
		`"plain"`, `"a\nb\tc\"d\\e\/f\bg\fh\ri"`, `"\u00e9\u20ac\ud83d\ude00"`, `"\ud800x"`, `"\udc00\ud800"`,
		`"\ud83d\u0041"`, "\"\xff\xfe ok\"", `"\u0000"`, "\"ab\xff\xfe\\ncdefgh\xc3\"", "\"abcdefghijklmn\xe2\x82\"", `"` + string(bytes.Repeat([]byte("line\\n"), 500)) + `"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		if json.Unmarshal(raw, &want) != nil {
			stringValue(raw) // anything, but no panic
			return
		}
		got := stringValue(raw)
		if got != want {
			t.Fatalf("%q: %q, encoding/json %q", raw, got, want)
		}
		clear(raw) // the string is a buffer of its own, not a view of raw
		if got != want {
			t.Fatalf("the string changed with the bytes it was read from: %q, want %q", got, want)
		}
	})
}

// TestUnquoteCopiesOnce: a string's text is decoded into one buffer, which
// is the string (a result's text of 100 KB was copied twice), and a
// string without escapes is no less its own.
func TestUnquoteCopiesOnce(t *testing.T) {
	for _, raw := range []string{`"` + strings.Repeat(`line\n`, 20000) + `"`, `"` + strings.Repeat("plain ", 20000) + `"`, `"\u00e9"`} {
		b := []byte(raw)
		var want string
		json.Unmarshal(b, &want)
		var got string
		if n := testing.AllocsPerRun(10, func() { got = stringValue(b) }); n != 1 {
			t.Errorf("%.20s…: %v allocations, want 1", raw, n)
		}
		clear(b)
		if got != want {
			t.Errorf("%.20s…: the string changed with the bytes it was read from", raw)
		}
	}
}

// FuzzQuickMessage holds the quick reading of a message equal to
// json.Unmarshal's on arbitrary lines: members in any order, of any type,
// given twice, in other letter cases, and no JSON at all.
func FuzzQuickMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","id":"7","error":{"code":-32601,"message":"no","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":null,"error":null,"Result":1}`, `{"JSONRPC":"2.0","id":2}`, `{"jsonrpc":2}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1},"error":{"message":"m"}}`, `[1]`, `null`, `"x"`, `{"jsonrpc":"2.0","id":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var want message
		wantErr := json.Unmarshal(line, &want)
		got, ok := quickMessage(line)
		if !ok {
			return // read by json.Unmarshal
		}
		if wantErr != nil {
			t.Fatalf("%q: read quickly, json.Unmarshal: %v", line, wantErr)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(&want)
		if !bytes.Equal(g, w) || !bytes.Equal(got.ID, want.ID) || !bytes.Equal(got.Params, want.Params) || !bytes.Equal(got.Result, want.Result) {
			t.Fatalf("%q:\nquickly        %s\njson.Unmarshal %s", line, g, w)
		}
	})
}

// FuzzValidJSON holds validJSON equal to json.Valid on arbitrary bytes:
// every kind of value, nested, with escapes, numbers of every form, and
// what is not JSON.
func FuzzValidJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,-2.5e+3,0,true,false,null,"x\"y\\z\u00e9\n"],"b":{}}`, `[]`, `{}`, `""`, `0`, `-0.0e-0`,
		`01`, `1.`, `.5`, `1e`, `--1`, `"\x01"`, `"\u12"`, `"\q"`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`,
		`tru`, `nulll`, ` [ 1 , 2 ] `, `"` + strings.Repeat("abcdefgh", 10) + `\"` + strings.Repeat("z", 9) + `"`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		"\"\xff\xfe\"", `"tab	inside"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("%q: validJSON %v, json.Valid %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 100<<10; i++ {
		fmt.Fprintf(&sb, "line %d of the file: the quick brown fox jumps over the lazy dog\n", i)
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": sb.String()}}}})
	b.SetBytes(int64(len(msg)))
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"validJSON", validJSON}, {"json.Valid", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if !v.valid(msg) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
