package layers

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentharness/harness/"

// allowed are the packages of the module each package may import: the
// stages flow one way (roles → compiler → policy; budget, events beside;
// govern orchestrating; gateway and hook as transports; app wiring them
// all; cmd only mapping flags; the small hook binary on hookclient
// alone).
var allowed = map[string][]string{
	"contract":             {},
	"pricing":              {},
	"budget":               {},
	"rego":                 {},
	"watch":                {},
	"internal/strict":      {},
	"internal/reuse":       {},
	"internal/flock":       {},
	"internal/ijson":       {},
	"internal/media":       {},
	"internal/confine":     {"internal/strict"},
	"roles":                {"internal/confine", "internal/strict"},
	"compiler":             {"contract", "roles"},
	"config":               {"contract", "internal/confine", "internal/strict", "pricing", "roles"},
	"custom":               {"compiler", "internal/confine", "internal/strict"},
	"events":               {"contract", "internal/flock", "internal/jsonstr"},
	"policy":               {"compiler", "contract", "internal/strict", "policy/plan", "rego"},
	"policy/plan":          {},
	"explain":              {"contract", "policy", "roles"},
	"transcript":           {"internal/flock", "pricing"},
	"govern":               {"budget", "compiler", "contract", "events", "internal/reuse", "policy", "pricing", "roles", "transcript"},
	"gateway":              {"budget", "contract", "events", "explain", "govern", "internal/ijson", "internal/jsonstr", "internal/media", "internal/reuse"},
	"hookclient":           {"internal/jsonstr"},
	"hook":                 {"budget", "contract", "govern", "hookclient", "internal/ijson", "internal/media"},
	"metrics":              {"contract", "events"},
	"alerts":               {"contract", "events"},
	"app":                  {"alerts", "budget", "compiler", "config", "contract", "custom", "events", "gateway", "govern", "hook", "internal/strict", "metrics", "policy", "report", "roles", "transcript", "ui", "watch"},
	"ui":                   {"budget", "contract", "events", "gateway", "govern"},
	"report":               {"budget", "contract", "events"},
	"internal/loggen":      {"budget", "contract", "events"},
	"internal/progress":    {},
	"internal/jsonstr":     {},
	"internal/browsertest": {},
	"hookd":                {"app", "hook", "hookclient", "metrics"},
	"cmd/harness-hook":     {"hookclient"},
	"internal/testredis":   {},
	"internal/testroles":   {"roles"},
	"internal/race":        {},
	"internal/layers":      {},
	"internal/soak":        {},
	"testdata/upstream":    {},
	"cmd/harness":          nil, // anything
}

// heavy are dependencies that the packages that read and write plain data
// must not link: the policy engine, and the ledger's stores.
var heavy = map[string][]string{
	"github.com/open-policy-agent/opa": {"contract", "pricing", "budget", "roles", "compiler", "config", "events", "metrics", "alerts"},
	"github.com/redis/go-redis":        {"contract", "pricing", "roles", "compiler", "config", "events", "policy", "metrics", "alerts"},
	"modernc.org/sqlite":               {"contract", "pricing", "roles", "compiler", "config", "events", "policy", "metrics", "alerts"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "-deps=false", "./...")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportGraph(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < 15 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		may, known := allowed[name]
		if !known {
			t.Errorf("package %s has no place in the import graph: add it to allowed", name)
			continue
		}
		if may == nil {
			continue
		}
		for _, imp := range p.Imports {
			if dep, ours := strings.CutPrefix(imp, module); ours && !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which it may not (allowed: %v)", name, dep, may)
			}
		}
		for prefix, not := range heavy {
			if !slices.Contains(not, name) {
				continue
			}
			for _, d := range p.Deps {
				if strings.HasPrefix(d, prefix) {
					t.Errorf("%s links %s (through %s): it must stay light", name, prefix, d)
					break
				}
			}
		}
	}
}

// smallHook is the small hook binary, which must start about as fast as a
// bare Go process: it links no package of the module but hookclient (and
// internal/jsonstr, which imports nothing), and
// none of the libraries whose initialisation dominates the harness's start
// (the policy engine, the MCP library and its JSON-schema dependency, the
// tokenizer, the ledger's stores).
const smallHook = module + "cmd/harness-hook"

func TestSmallHookLinksNothingHeavy(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/harness-hook")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	deps := strings.Fields(out.String())
	if !slices.Contains(deps, smallHook) || !slices.Contains(deps, module+"hookclient") {
		t.Fatalf("go list -deps ./cmd/harness-hook: %q", deps)
	}
	for _, tt := range []struct{ name, prefix string }{
		{"the policy engine", "github.com/open-policy-agent/opa"},
		{"the MCP library", "github.com/mark3labs/mcp-go"},
		{"the MCP library's JSON schemas", "github.com/google/jsonschema-go"},
		{"the tokenizer", "github.com/tiktoken-go/tokenizer"},
		{"the Redis client", "github.com/redis/go-redis"},
		{"SQLite", "modernc.org/sqlite"},
		{"the command line library", "github.com/spf13/cobra"},
	} {
		for _, d := range deps {
			if strings.HasPrefix(d, tt.prefix) {
				t.Errorf("the small hook binary links %s (%s)", tt.name, d)
				break
			}
		}
	}
	// Cgo makes the binary dynamically linked, and the dynamic loader
	// takes about a millisecond of a hook call here: net links cgo's name
	// resolver (hookclient dials the daemon without it), os/user cgo's
	// user lookup.
	for _, cgo := range []string{"runtime/cgo", "net", "os/user"} {
		if slices.Contains(deps, cgo) {
			t.Errorf("the small hook binary links %s, and so links dynamically", cgo)
		}
	}
	for _, d := range deps {
		if ours, ok := strings.CutPrefix(d, module); ok && ours != "hookclient" && ours != "internal/jsonstr" && d != smallHook {
			t.Errorf("the small hook binary links %s: only hookclient (and internal/jsonstr, which imports nothing) may be", d)
		}
	}
}
