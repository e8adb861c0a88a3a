package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func check(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := Append(nil, s); !bytes.Equal(got, want) {
		t.Errorf("Append(%q) = %s, json.Marshal %s", s, got, want)
	}
}

// Every code point, between plain characters and an escaped one, and
// bytes that are not UTF-8, are written as json.Marshal writes them.
func TestAppendIsMarshal(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r <= 0x10ffff; r++ {
		b.WriteString("a")
		b.WriteRune(r)
		b.WriteString("<")
		if b.Len() > 1<<16 {
			check(t, b.String())
			b.Reset()
		}
	}
	check(t, b.String())
	for _, s := range []string{"", "\xff", "a\xc3(", "\xed\xa0\x80", "\xe2\x80", "\xf4\x90\x80\x80", "\u2028\u2029", "\"\\/\b\f\n\r\t\x7f"} {
		check(t, s)
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("plain")
	f.Add("<&>\u2028\xff\x00")
	f.Fuzz(check)
}
