package strict

import (
	"strings"
	"testing"
)

const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

func TestQuote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"lots", `"lots"`},
		{"", `""`},
		{strings.Repeat("a", MaxQuote), `"` + strings.Repeat("a", MaxQuote) + `"`},
		{secret, `"` + secret[:MaxQuote] + `"…`},
		{strings.Repeat("a", MaxQuote-1) + "é and more", `"` + strings.Repeat("a", MaxQuote-1) + `"…`}, // never half a character
		{"tab\there", `"tab\there"`},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := TypeName(secret); got != `string "`+secret[:MaxQuote]+`"…` {
		t.Errorf("TypeName: %s", got)
	}
}

// Clip cuts what a parser's message quotes of a file, and nothing else.
func TestClip(t *testing.T) {
	t.Parallel()
	cut := secret[:MaxQuote] + "…"
	for _, tt := range []struct{ in, want string }{
		{`expected value but found "AKIAIOSFODNN" instead`, `expected value but found "AKIAIOSFODNN" instead`},
		{`Key '"` + secret + `"' has already been defined.`, `Key '"` + secret[:MaxQuote-1] + `…' has already been defined.`},
		{`undefined ref: {"` + secret + `": 1}.a.b.c`, `undefined ref: {"` + cut + `": 1}.a.b.c`},
		{"non-terminated `" + secret + "`", "non-terminated `" + cut + "`"},
		{`escaped "a\"` + secret + `"`, `escaped "a\"` + secret[:MaxQuote-3] + `…"`},
		{`"` + strings.Repeat("b", MaxQuote-1) + `\"` + secret + `"`, `"` + strings.Repeat("b", MaxQuote-1) + `…"`},
		{"var " + strings.Repeat("x", 100) + " is unsafe", "var " + strings.Repeat("x", 2*MaxQuote) + "… is unsafe"},
		{"conflicting rules data.harness.custom.destructive_shell.deny found", "conflicting rules data.harness.custom.destructive_shell.deny found"},
		{"it can't be 'this' or that's it: " + strings.Repeat("long words ", 8), "it can't be 'this' or that's it: " + strings.Repeat("long words ", 8)},
		{`an unclosed "quote and then words`, `an unclosed "quote and then words`},
	} {
		if got := Clip(tt.in); got != tt.want {
			t.Errorf("Clip(%q)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// No error of a TOML file quotes more of it than the offending token, cut
// short.
func TestDecodeErrorsQuoteLittle(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"key = " + secret + "\n",
		`"` + secret + "\" = 1\n\"" + secret + "\" = 2\n",
		"[\"" + secret + "\"]\n[\"" + secret + "\"]\n",
		"key = \"\\u" + secret + "\"\n",
	} {
		_, err := Decode("f.toml", []byte(src))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%q: %v", src, err)
		}
	}
	doc, _ := Decode("f.toml", []byte("[limits]\n\""+secret+"\" = 1\n["+"\""+secret+"\"]\n"))
	for _, e := range []*Error{doc.Unknown("limits."+secret, secret, "limits", []string{"max"}), doc.Unknown(secret, secret, "", []string{"limits"})} {
		if strings.Contains(e.Error(), secret) || !strings.Contains(e.Error(), secret[:MaxQuote]) {
			t.Errorf("unknown key or section: %v", e)
		}
	}
}
