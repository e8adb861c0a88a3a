package policy

import (
	"context"
	"regexp"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/agentharness/harness/compiler"
	"github.com/agentharness/harness/contract"
)

// suspectCase is a string and whether the self-protection rules refuse it
// (as a path an edit changes, or a shell command).
type suspectCase struct {
	s       string
	refused bool
}

// suspectEngine is an engine whose self-protection rules guard paths under
// the home directory, outside it, and (with ancestor) one the home
// directory is under, and what its protect_reasons entry point says of an
// edit of a path and a shell command.
func suspectEngine(t testing.TB, ancestor bool) (suspect *regexp.Regexp, refused func(string) bool) {
	paths := []string{"/home/dev/.lean-ctx", "/home/dev/ledgers/main.db", "/srv/state"}
	if ancestor {
		paths = append(paths, "/home")
	}
	doc := compiler.Compile(testSet(t), compiler.Config{ShellTools: contract.DefaultShellTools, ExemptTools: contract.DefaultExemptTools,
		EditTools: contract.DefaultEditTools, Protect: compiler.Protect{Home: "/home/dev", Paths: paths}})
	e, err := New(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	pq := rawQuery(t, e, "data.harness.protect_reasons")
	reasons := func(tool, key, s string, resolved map[string][]string) int {
		in, err := inputValue(contract.Input{Role: "admin", Tool: tool, Arguments: map[string]any{key: s}, Resolved: resolved}, "track")
		if err != nil {
			t.Fatal(err)
		}
		rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(in))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q: %v %v", s, rs, err)
		}
		return len(rs[0].Expressions[0].Value.([]any))
	}
	return regexp.MustCompile(doc.Config.Protect.Suspect.Regex), func(s string) bool {
		// As a path an edit changes, as a shell command, and as what a
		// path an edit changes resolves to (input.resolved).
		return reasons("ctx_edit", "path", s, nil)+reasons("ctx_shell", "command", s, nil)+
			reasons("ctx_edit", "path", "x", map[string][]string{"x": {s}}) > 0
	}
}

// Every string the self-protection rules refuse holds a match of the
// suspect expression (so that a call whose strings hold none is left to
// the quick rules safely), for paths in every form they take and commands
// that name them or the operator's verbs.
func TestSuspectCoversProtection(t *testing.T) {
	for _, ancestor := range []bool{false, true} {
		suspect, refused := suspectEngine(t, ancestor)
		for _, tt := range []suspectCase{
			{"/home/dev/.lean-ctx/roles/x.toml", true},
			{"~/.lean-ctx/harness.toml", true},
			{"~/ledgers/main.db", true},
			{"$HOME/ledgers/main.db", true},
			{"${HOME}/ledgers/main.db", true},
			{"/home/dev/ledgers/main.db", true},
			{"cp x ~/ledgers/main.db", true},
			{"/srv/state/ledger.db", true},
			{"rm -rf /srv/state", true},
			{"harness role set admin", true},
			{"x budget  reset --session s", true},
			{".claude/settings.local.json", true},
			{"/srv//state/ledger.db", true},
			{"~/./ledgers/main.db", true},
			{"/srv/x/../state/ledger.db", true},
			{"file:///srv/state/ledger.db", true},
			{"rm /srv/./state/ledger.db", true},
			{"cd /srv && rm -rf state", true},
			{"cd $HOME && rm ./ledgers/main.db", true},
			{"cd ~ && rm -rf ledgers", false},
			{"main.go", false},
			{"/srv/statement.txt", true}, // as a shell command: it names /srv/state
			{"go test ./...", false},
			{"~/notes.txt", ancestor},
			{"/home/other/x", ancestor},
		} {
			if got := refused(tt.s); got != tt.refused {
				t.Errorf("ancestor %v, %q: refused %v, want %v", ancestor, tt.s, got, tt.refused)
			}
			if tt.refused && !suspect.MatchString(tt.s) {
				t.Errorf("ancestor %v, %q is refused but not suspect", ancestor, tt.s)
			}
		}
	}
}

// FuzzSuspectCoversProtection holds the suspect expression a superset of
// the self-protection rules on arbitrary strings.
func FuzzSuspectCoversProtection(f *testing.F) {
	suspects, refuse := [2]*regexp.Regexp{}, [2]func(string) bool{}
	suspects[0], refuse[0] = suspectEngine(f, false)
	suspects[1], refuse[1] = suspectEngine(f, true)
	for _, s := range []string{"~/ledgers/main.db", "echo > $HOME/.lean-ctx/x", "/home/devx", "harness\trole\nset", "/srv/state/../x", "/srv/x/../state", "$HOME/../dev//ledgers/main.db", "cd /srv && rm -rf state/x", "cd ~ && cp x 'ledgers/main.db'"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, ancestor bool) {
		i := 0
		if ancestor {
			i = 1
		}
		if refuse[i](s) && !suspects[i].MatchString(s) {
			t.Fatalf("ancestor %v, %q is refused but not suspect", ancestor, s)
		}
	})
}
