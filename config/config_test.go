package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentharness/harness/pricing"
)

func write(t *testing.T, src string) string {
	t.Helper()
	if src == "" {
		return ""
	}
	p := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	t.Parallel()
	user := write(t, `
[ledger]
url = "redis://127.0.0.1:6379/2"
prefix = "team:"
ttl = "720h"

[enforcement]
mode = "shadow"
default_role = "reviewer"

[tools]
shell = ["ctx_shell", "bash"]
exempt = ["ctx_session", "ctx_cost"]

[cost]
default_model = "sonnet"

[cost.models.sonnet]
input_usd_per_mtok = 3
output_usd_per_mtok = 15.0

[agents.claude-code]
role = "reviewer"
max_role = "coder"

[gateway]
prefix = "always"

[hook]
allow = "allow"

[hook.tools]
WebFetch = "ctx_read"

[[gateway.tokens]]
agent = "claude-code"
token = "0123456789abcdef-secret"
role = "reviewer"

[[gateway.tokens]]
agent = "ci"
token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
max_role = "reviewer"

[[upstream]]
name = "lean"
command = "lean-ctx"
args = ["mcp"]
env = { LEAN_CTX_LOG = "warn" }

[[upstream]]
name = "remote"
url = "http://127.0.0.1:9000/mcp"

[agents."cursor"]
role = "debugger"

[log]
events = "/var/log/harness/events.jsonl"
decisions = "off"
max_size_mb = 50
max_files = 2
mask = ["/arguments/password"]
`)
	project := write(t, "[tools]\nshell = [\"mcp__exec__run\", \"bash\"]\n")
	c, err := Load(user, project)
	if err != nil {
		t.Fatal(err)
	}
	if c.LedgerURL != "redis://127.0.0.1:6379/2" || c.LedgerPrefix != "team:" || c.LedgerTTL != 720*time.Hour ||
		c.Mode != Shadow || c.DefaultRole != "reviewer" {
		t.Errorf("config %+v", c)
	}
	if !slices.Equal(c.ShellTools, []string{"ctx_shell", "bash", "mcp__exec__run"}) || !slices.Equal(c.ExemptTools, []string{"ctx_session", "ctx_cost"}) {
		t.Errorf("tools: shell %v exempt %v", c.ShellTools, c.ExemptTools)
	}
	if p, _ := c.Prices.Price(""); p != (pricing.Price{InputMicrosPerMTok: 3_000_000, OutputMicrosPerMTok: 15_000_000}) {
		t.Errorf("default price %+v", p)
	}
	if _, err := c.Prices.Price("default"); err != nil {
		t.Errorf("the built-in price must stay available: %v", err)
	}
	if len(c.Files) != 2 {
		t.Errorf("files %v", c.Files)
	}
	if c.EventsFile != "/var/log/harness/events.jsonl" || c.DecisionsFile != Off || c.LogMaxBytes != 50<<20 || c.LogMaxFiles != 2 ||
		!slices.Equal(c.Mask, []string{"/arguments/password"}) {
		t.Errorf("log: %+v", c)
	}
	if c.AgentRoles["claude-code"] != "reviewer" || c.AgentRoles["cursor"] != "debugger" || len(c.AgentRoles) != 2 {
		t.Errorf("agents: %v", c.AgentRoles)
	}
	if !maps.Equal(c.AgentMaxRoles, map[string]string{"claude-code": "coder", "ci": "reviewer"}) || c.Tokens[1].MaxRole != "reviewer" {
		t.Errorf("max roles: %v", c.AgentMaxRoles)
	}
	if c.HookAllow != "allow" || c.HookTools["WebFetch"] != "ctx_read" {
		t.Errorf("hook: %q %v", c.HookAllow, c.HookTools)
	}
	if c.Prefix != "always" || len(c.Tokens) != 2 || c.Tokens[0].Role != "reviewer" || c.Tokens[1].SHA256 == "" {
		t.Errorf("gateway: %s %+v", c.Prefix, c.Tokens)
	}
	if len(c.Upstreams) != 2 || c.Upstreams[0].Command != "lean-ctx" || c.Upstreams[0].Args[0] != "mcp" ||
		c.Upstreams[0].Env["LEAN_CTX_LOG"] != "warn" || c.Upstreams[1].URL == "" {
		t.Errorf("upstreams: %+v", c.Upstreams)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(filepath.Join(t.TempDir(), "missing.toml"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != Enforce || c.LedgerURL != "" || !slices.Equal(c.ShellTools, []string{"ctx_shell", "ctx_execute"}) ||
		!slices.Equal(c.ExemptTools, []string{"ctx_session"}) || c.DefaultRole != "coder" || len(c.Files) != 0 {
		t.Errorf("defaults %+v", c)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		user, project string
		want          []string
	}{
		{"unknown key", "[ledger]\nurl = \"memory:\"\nprefx = \"x\"\n", "", []string{`:3:1: unknown key "prefx" in [ledger] (did you mean "prefix"?)`}},
		{"unknown section", "[costs]\n", "", []string{`:1:1: unknown section [costs] (did you mean [cost]?)`}},
		{"bad mode", "[enforcement]\nmode = \"lenient\"\n", "", []string{`:2:1: enforcement.mode: string "lenient": want "enforce" or "shadow"`}},
		{"bad ttl", "[ledger]\nttl = \"soon\"\n", "", []string{`:2:1: ledger.ttl: "soon": want a duration`}},
		{"pattern as shell tool", "[tools]\nshell = [\"ctx_*\"]\n", "", []string{`tools.shell: item 1: string "ctx_*" is not a tool name`}},
		{"unpriced default model", "[cost]\ndefault_model = \"gpt-9\"\n", "", []string{`cost.default_model: no price for model "gpt-9"; priced models: default`}},
		{"model missing a price", "[cost.models.x]\ninput_usd_per_mtok = 1\n", "", []string{`cost.models: model "x": output_usd_per_mtok is missing`}},
		{"negative price", "[cost.models.x]\ninput_usd_per_mtok = -1\noutput_usd_per_mtok = 1\n", "", []string{`-1 is out of range`}},
		{"project may not shadow", "", "[enforcement]\nmode = \"shadow\"\n", []string{
			`:2:1: enforcement.mode may only be set in the user's harness.toml: a project's file may only add shell tools`}},
		{"project may not mask", "", "[tools]\nshell = [\"bash\"]\n\n[log]\nmask = [\"/arguments\", \"/tool\", \"/agent\", \"/session\", \"/role\"]\n", []string{
			`:5:1: log.mask may only be set in the user's harness.toml: a project's file may only add shell tools`}},
		{"project may not turn logs off", "", "[log]\ndecisions = \"off\"\n", []string{`log.decisions may only be set in the user's harness.toml`}},
		{"project may not choose agent roles", "", "[agents.x]\nrole = \"admin\"\n", []string{`[agents] may only be set in the user's harness.toml`}},
		{"agent without role", "[agents.x]\nrol = \"coder\"\n", "", []string{`agents.x: unknown key "rol" (want role, max_role)`}},
		{"empty agent", "[agents.x]\n", "", []string{`agents.x: give role, max_role or both`}},
		{"bad max role", "[agents.x]\nmax_role = 3\n", "", []string{`agents.x: max_role: want a role name, got integer`}},
		{"two max roles", "[agents.x]\nmax_role = \"coder\"\n[[gateway.tokens]]\nagent = \"x\"\ntoken = \"0123456789abcdef-x\"\nmax_role = \"reviewer\"\n", "",
			[]string{`gateway.tokens: agent x: max_role "reviewer", but "coder" elsewhere: an agent has one most privileged role`}},
		{"token max role", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"0123456789abcdef-x\"\nmax_role = \"no good\"\n", "", []string{`max_role: "no good" is not a role name`}},
		{"project may not add upstreams", "", "[[upstream]]\nname = \"x\"\ncommand = \"sh\"\n", []string{`[[upstream]] may only be set in the user's harness.toml: a cloned repository must not start programs`}},
		{"upstream with both", "[[upstream]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://b\"\n", "", []string{`upstream: 1 (x): give a command or a url, not both`}},
		{"short token", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"short\"\n", "", []string{`a token must have at least 16 characters`}},
		{"project may not map hook tools", "", "[hook.tools]\nBash = \"ctx_read\"\n", []string{`hook.tools may only be set in the user's harness.toml`}},
		{"bad mask", "[log]\nmask = [\"arguments.password\"]\n", "", []string{`log.mask: item 1: string "arguments.password" is not a JSON pointer`}},
		{"project may not exempt or move the ledger", "", "[tools]\nexempt = [\"ctx_shell\"]\n[ledger]\nurl = \"memory:\"\n", []string{
			`:2:1: tools.exempt may only be set in the user's harness.toml`,
			`:4:1: ledger.url may only be set in the user's harness.toml`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(write(t, tt.user), write(t, tt.project))
			if err == nil {
				t.Fatal("accepted")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) > 1 {
				lines = lines[1:] // "N errors:" heading
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant …%s…", i, lines[i], w)
				}
			}
		})
	}
}
