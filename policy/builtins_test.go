package policy

import (
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The allow-list and the refused list together are exactly OPA's built-ins:
// an OPA upgrade that adds one fails here until someone puts it in one list
// or the other, and a name that OPA no longer has is noticed too.
func TestBuiltinLists(t *testing.T) {
	var opa []string
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		opa = append(opa, b.Name)
	}
	listed := append(slices.Clone(allowedBuiltins), refusedBuiltins...)
	for _, n := range opa {
		if !slices.Contains(listed, n) {
			t.Errorf("OPA has a built-in the harness has not decided on: %s (add it to allowedBuiltins if policies may call it, else to refusedBuiltins)", n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(opa, n) {
			t.Errorf("built-in %s is listed but this OPA has none of that name", n)
		}
	}
	for _, n := range refusedBuiltins {
		if slices.Contains(allowedBuiltins, n) {
			t.Errorf("built-in %s is both allowed and refused", n)
		}
	}
	for _, n := range clockBuiltins {
		if !slices.Contains(allowedBuiltins, n) {
			t.Errorf("built-in %s reads the clock but is not allowed", n)
		}
	}
}

// Capabilities keep the allowed built-ins only: one OPA would add later is
// not among them, and neither is any refused one; no network host is
// allowed.
func TestCapabilitiesAreAnAllowList(t *testing.T) {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = append(caps.Builtins, &ast.Builtin{Name: "net.fetch_everything"})
	got := map[string]bool{}
	for _, b := range restrict(caps).Builtins {
		got[b.Name] = true
	}
	for _, n := range append([]string{"net.fetch_everything"}, refusedBuiltins...) {
		if got[n] {
			t.Errorf("%s is available to policies", n)
		}
	}
	for _, n := range []string{"glob.match", "regex.match", "sprintf", "internal.member_2", "time.now_ns"} {
		if !got[n] {
			t.Errorf("%s is not available to policies", n)
		}
	}
	if n := len(got); n != len(allowedBuiltins) {
		t.Errorf("%d built-ins available, want the %d allowed", n, len(allowedBuiltins))
	}
	if a := Capabilities().AllowNet; a == nil || len(a) != 0 {
		t.Errorf("AllowNet = %v, want an empty list (no host)", a)
	}
}
