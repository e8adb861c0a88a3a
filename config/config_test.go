package config

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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
timeout = "500ms"
replicas = 1

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

[cost.models.claude-haiku-4-5]          # replaces the built-in price
input_usd_per_mtok = 0.5
output_usd_per_mtok = 2.5
cache_write_usd_per_mtok = 0.625
cache_write_1h_usd_per_mtok = 1
cache_read_usd_per_mtok = 0.05

[agents.claude-code]
role = "reviewer"
max_role = "coder"

[gateway]
prefix = "always"
max_sessions = 8
max_requests = 16
max_pending_mb = 100

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
	c, err := Load(Files{User: user, Project: []string{project}})
	if err != nil {
		t.Fatal(err)
	}
	if c.LedgerURL != "redis://127.0.0.1:6379/2" || c.LedgerPrefix != "team:" || c.LedgerTTL != 720*time.Hour ||
		c.LedgerTimeout != 500*time.Millisecond || c.LedgerReplicas == nil || *c.LedgerReplicas != 1 ||
		c.Mode != Shadow || c.DefaultRole != "reviewer" {
		t.Errorf("config %+v", c)
	}
	if !slices.Equal(c.ShellTools, []string{"ctx_shell", "bash", "mcp__exec__run"}) || !slices.Equal(c.ExemptTools, []string{"ctx_session", "ctx_cost"}) {
		t.Errorf("tools: shell %v exempt %v", c.ShellTools, c.ExemptTools)
	}
	if p, _ := c.Prices.Price(""); p != (pricing.Price{InputMicrosPerMTok: 3_000_000, OutputMicrosPerMTok: 15_000_000}) {
		t.Errorf("default price %+v", p)
	}
	if p, _ := c.Prices.Price("claude-haiku-4-5-20251001"); p != (pricing.Price{InputMicrosPerMTok: 500_000, OutputMicrosPerMTok: 2_500_000,
		CacheWriteMicrosPerMTok: 625_000, CacheWrite1hMicrosPerMTok: 1_000_000, CacheReadMicrosPerMTok: 50_000}) {
		t.Errorf("an overridden built-in price: %+v", p)
	}
	if p, _ := c.Prices.Price("gpt-5.4"); p.OutputMicrosPerMTok != 15_000_000 {
		t.Errorf("a built-in price: %+v", p)
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
	if c.HTTP.MaxSessions != 8 || c.HTTP.MaxRequests != 16 || c.HTTP.MaxPending != 100<<20 {
		t.Errorf("gateway limits: %+v", c.HTTP)
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
	c, err := Load(Files{User: filepath.Join(t.TempDir(), "missing.toml"), Project: []string{filepath.Join(t.TempDir(), "missing.toml")}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != Enforce || c.LedgerURL != "" || c.LedgerTimeout != 0 || c.LedgerReplicas != nil || !slices.Equal(c.ShellTools, []string{"ctx_shell", "ctx_execute"}) ||
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
		{"bad ledger timeout", "[ledger]\ntimeout = \"1h\"\n", "", []string{`:2:1: ledger.timeout: "1h": want a duration from 10ms to 1m`}},
		{"bad replicas", "[ledger]\nreplicas = -1\n", "", []string{`:2:1: ledger.replicas: integer -1: want a whole number from 0 to 100`}},
		{"replicas in words", "[ledger]\nreplicas = \"one\"\n", "", []string{`:2:1: ledger.replicas: string "one": want a whole number`}},
		{"project may not choose the replicas", "", "[ledger]\nreplicas = 0\ntimeout = \"1m\"\n", []string{
			`:2:1: ledger.replicas may only be set in the user's harness.toml`,
			`:3:1: ledger.timeout may only be set in the user's harness.toml`}},
		{"pattern as shell tool", "[tools]\nshell = [\"ctx_*\"]\n", "", []string{`tools.shell: item 1: string "ctx_*" is not a tool name`}},
		{"control character in an edit pattern", "[tools]\nedit = [\"ctx_edit\\u0000*\"]\n", "", []string{`:2:1: tools.edit: item 1: "ctx_edit\x00*" is not a tool pattern`}},
		{"unicode space in an edit pattern", "[tools]\nedit = [\"fs\\u00a0*\"]\n", "", []string{`tools.edit: item 1: "fs\u00a0*" is not a tool pattern`}},
		{"control character in a shell tool", "", "[tools]\nshell = [\"bash\\u001b\"]\n", []string{`tools.shell: item 1: string "bash\x1b" is not a tool name`}},
		{"control character in an exempt tool", "[tools]\nexempt = [\"ctx_session\\t\"]\n", "", []string{`tools.exempt: item 1: string "ctx_session\t" is not a tool name`}},
		{"unpriced default model", "[cost]\ndefault_model = \"gpt-9\"\n", "", []string{`:2:1: cost.default_model: no price for model "gpt-9"`}},
		{"unpriced default model beside another error", "[cost]\ndefault_model = \"gpt-9\"\n[log]\nmax_files = 0\n", "", []string{
			`:2:1: cost.default_model: no price for model "gpt-9"`, `:4:1: log.max_files: integer 0: want a whole number`}},
		{"a cache price's typo", "[cost.models.x]\ninput_usd_per_mtok = 1\noutput_usd_per_mtok = 1\ncache_reads_usd_per_mtok = 1\n", "", []string{`unknown key "cache_reads_usd_per_mtok" (did you mean "cache_read_usd_per_mtok"?)`}},
		{"model missing a price", "[cost.models.x]\ninput_usd_per_mtok = 1\n", "", []string{`:1:1: cost.models: model "x": output_usd_per_mtok is missing`}},
		{"negative price", "[cost.models.x]\ninput_usd_per_mtok = -1\noutput_usd_per_mtok = 1\n", "", []string{`:2:1: cost.models: model "x": input_usd_per_mtok: -1 is out of range`}},
		{"project may not shadow", "", "[enforcement]\nmode = \"shadow\"\n", []string{
			`:2:1: enforcement.mode may only be set in the user's harness.toml: a project's file may only add shell tools`}},
		{"project may not mask", "", "[tools]\nshell = [\"bash\"]\n\n[log]\nmask = [\"/arguments\", \"/tool\", \"/agent\", \"/session\", \"/role\"]\n", []string{
			`:5:1: log.mask may only be set in the user's harness.toml: a project's file may only add shell tools`}},
		{"project may not turn logs off", "", "[log]\ndecisions = \"off\"\n", []string{`log.decisions may only be set in the user's harness.toml`}},
		{"project may not choose agent roles", "", "[agents.x]\nrole = \"admin\"\n", []string{`[agents] may only be set in the user's harness.toml`}},
		{"agent without role", "[agents.x]\nrol = \"coder\"\n", "", []string{`:2:1: agents.x.rol: unknown key "rol" (want role, max_role, budget) (did you mean "role"?)`}},
		{"empty agent", "[agents.x]\n", "", []string{`agents.x: give role, max_role, budget or several`}},
		{"bad max role", "[agents.x]\nmax_role = 3\n", "", []string{`:2:1: agents.x.max_role: want a role name, got integer`}},
		{"budget without limits", "[agents.x.budget]\nperiod = \"day\"\n", "", []string{`:1:1: agents.x.budget: give at least one of max_context_tokens`}},
		{"bad period", "[agents.x.budget]\nmax_cost_usd = 1\nperiod = \"hour\"\n", "", []string{`:3:1: agents.x.budget.period: string "hour": want "day", "week", "month" or "total"`}},
		{"budget typo", "[agents.x.budget]\nmax_cost = 1\n", "", []string{`:2:1: agents.x.budget.max_cost: unknown key "max_cost" (did you mean "max_cost_usd"?)`}},
		{"bad budget limit", "[agents.x]\nrole = \"coder\"\nbudget = { max_shell_invocations = -1 }\n", "", []string{`:3:1: agents.x.budget.max_shell_invocations: want a whole number >= 0, got integer -1`}},
		{"budget warns after it blocks", "[agents.x.budget]\nmax_cost_usd = 1\nwarn_at_percent = 90\nblock_at_percent = 50\n", "", []string{
			`:3:1: agents.x.budget.warn_at_percent: warn_at_percent 90 is above block_at_percent 50`}},
		{"every agent has only a budget", "[agents.\"*\"]\nrole = \"reviewer\"\n", "", []string{`may only hold a budget`}},
		{"project may not set agent budgets", "", "[agents.x.budget]\nmax_cost_usd = 100\n", []string{`[agents] may only be set in the user's harness.toml`}},
		{"project may not turn protection off", "", "[protect]\nenabled = false\n", []string{`protect.enabled may only be set in the user's harness.toml`}},
		{"project may not change the edit tools", "", "[tools]\nedit = []\n", []string{`tools.edit may only be set in the user's harness.toml`}},
		{"project may not change the deadline", "", "[policy]\ntimeout = \"1m\"\n", []string{`policy.timeout may only be set in the user's harness.toml`}},
		{"relative protected path", "[protect]\npaths = [\"secrets\"]\n", "", []string{`protect.paths: item 1: "secrets" is not an absolute path`}},
		{"bad deadline", "[policy]\ntimeout = \"2h\"\n", "", []string{`policy.timeout: "2h": want a duration from 1ms to 1m`}},
		{"two max roles", "[agents.x]\nmax_role = \"coder\"\n[[gateway.tokens]]\nagent = \"x\"\ntoken = \"0123456789abcdef-x\"\nmax_role = \"reviewer\"\n", "",
			[]string{`:6:1: gateway.tokens[1].max_role: agent x: max_role "reviewer", but "coder" elsewhere: an agent has one most privileged role`}},
		{"token max role", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"0123456789abcdef-x\"\nmax_role = \"no good\"\n", "", []string{`:4:1: gateway.tokens: 1: max_role: "no good" is not a role name`}},
		{"second token", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"0123456789abcdef-a\"\n\n[[gateway.tokens]]\nagent = \"b\"\ntoken = \"short\"\n", "", []string{
			`:7:1: gateway.tokens: 2 (b): a token must have at least 16 characters`}},
		{"project may not add upstreams", "", "[[upstream]]\nname = \"x\"\ncommand = \"sh\"\n", []string{`[[upstream]] may only be set in the user's harness.toml: a cloned repository must not start programs`}},
		{"upstream with both", "[[upstream]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://b\"\n", "", []string{`:1:1: upstream: 1 (x): give a command or a url, not both`}},
		{"second upstream's key", "[[upstream]]\nname = \"x\"\ncommand = \"a\"\n[[upstream]]\nname = \"y\"\nargs = \"-v\"\n", "", []string{
			`:6:1: upstream: 2: args: want an array of strings, got string "-v"`}},
		{"short token", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"short\"\n", "", []string{`a token must have at least 16 characters`}},
		{"token without agent", "[[gateway.tokens]]\ntoken = \"0123456789abcdef-a\"\n", "", []string{`:1:1: gateway.tokens: 1: agent is missing (or operator = true`}},
		{"operator token's role", "[[gateway.tokens]]\ntoken = \"0123456789abcdef-a\"\noperator = true\nrole = \"coder\"\n", "", []string{
			`:4:1: gateway.tokens: 1: role is for an agent's token: this operator token names no agent`}},
		{"short operator token", "[[gateway.tokens]]\ntoken = \"short\"\noperator = true\n", "", []string{`:2:1: gateway.tokens: 1 (operator): a token must have at least 16 characters`}},
		{"operator not a boolean", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"0123456789abcdef-a\"\noperator = \"yes\"\n", "", []string{
			`:4:1: gateway.tokens: 1: operator: want true or false`}},
		{"project may not map hook tools", "", "[hook.tools]\nBash = \"ctx_read\"\n", []string{`hook.tools may only be set in the user's harness.toml`}},
		{"bad mask", "[log]\nmask = [\"arguments.password\"]\n", "", []string{`log.mask: item 1: string "arguments.password" is not a JSON pointer`}},
		{"project may not exempt or move the ledger", "", "[tools]\nexempt = [\"ctx_shell\"]\n[ledger]\nurl = \"memory:\"\n", []string{
			`:2:1: tools.exempt may only be set in the user's harness.toml`,
			`:4:1: ledger.url may only be set in the user's harness.toml`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(Files{User: write(t, tt.user), Project: []string{write(t, tt.project)}})
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
				// Every error names its file, line and column.
				if !regexp.MustCompile(`^/\S+/harness\.toml:\d+:\d+: `).MatchString(lines[i]) {
					t.Errorf("error %d names no file, line and column: %s", i, lines[i])
				}
			}
		})
	}
}

// The user's file sets agent budgets across sessions (every agent's, and
// one's own), the tools that edit, what self-protection guards and the
// policy's deadline; omitted budget keys take their defaults.
func TestAgentBudgetsAndProtection(t *testing.T) {
	t.Parallel()
	c, err := Load(Files{User: write(t, `
[agents."*".budget]
max_cost_usd = 20

[agents.claude-code]
role = "reviewer"

[agents.claude-code.budget]
period = "week"
max_context_tokens = 5000000
max_shell_invocations = 0
warn_at_percent = 90
block_at_percent = 255

[tools]
edit = ["ctx_edit", "fs_*"]

[protect]
enabled = false
paths = ["/srv/secrets/", "/etc/harness"]

[policy]
timeout = "50ms"
`)})
	if err != nil {
		t.Fatal(err)
	}
	n := func(v int64) *int64 { return &v }
	want := map[string]AgentBudget{
		AnyAgent:      {Period: "day", CostMicros: n(20_000_000), WarnPercent: 80, BlockPercent: 100},
		"claude-code": {Period: "week", Tokens: n(5_000_000), Shell: n(0), WarnPercent: 90, BlockPercent: 255},
	}
	if !reflect.DeepEqual(c.AgentBudgets, want) || c.AgentRoles["claude-code"] != "reviewer" {
		t.Errorf("agent budgets %+v, roles %v", c.AgentBudgets, c.AgentRoles)
	}
	if !slices.Equal(c.EditTools, []string{"ctx_edit", "fs_*"}) || !c.ProtectOff ||
		!slices.Equal(c.ProtectPaths, []string{"/srv/secrets", "/etc/harness"}) || c.PolicyTimeout != 50*time.Millisecond {
		t.Errorf("edit %v, protect off %v %v, timeout %v", c.EditTools, c.ProtectOff, c.ProtectPaths, c.PolicyTimeout)
	}
	d := Default()
	if d.ProtectOff || d.PolicyTimeout != DefaultPolicyTimeout || len(d.AgentBudgets) != 0 || !slices.Contains(d.EditTools, "ctx_edit") {
		t.Errorf("defaults: %+v", d)
	}
}

// Every layer of a project adds to the configuration, and each is held to
// the project's keys.
func TestProjectLayers(t *testing.T) {
	t.Parallel()
	user := write(t, "[tools]\nshell = [\"bash\"]\n")
	root := write(t, "[tools]\nshell = [\"root_exec\"]\n")
	nested := write(t, "[tools]\nshell = [\"pkg_exec\", \"bash\"]\n")
	c, err := Load(Files{User: user, Project: []string{root, filepath.Join(t.TempDir(), "missing.toml"), nested}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ShellTools, []string{"bash", "root_exec", "pkg_exec"}) ||
		!slices.Equal(c.Files, []string{user, root, nested}) {
		t.Errorf("shell %v, mask %v, files %v", c.ShellTools, c.Mask, c.Files)
	}
	bad := write(t, "[enforcement]\nmode = \"shadow\"\n")
	_, err = Load(Files{User: user, Project: []string{root, bad}})
	if err == nil || !strings.HasPrefix(err.Error(), bad+":2:1: enforcement.mode may only be set in the user's harness.toml") {
		t.Errorf("a nested layer loosening governance: %v", err)
	}
	if f := FindFiles("/home/u", "/r", []string{"/r/.lean-ctx", "/r/pkg/.lean-ctx"}); f.User != "/home/u/.lean-ctx/harness.toml" || f.Root != "/r" ||
		!slices.Equal(f.Project, []string{"/r/.lean-ctx/harness.toml", "/r/pkg/.lean-ctx/harness.toml"}) {
		t.Errorf("FindFiles: %+v", f)
	}
}

// A project's harness.toml that links out of the project is refused,
// naming the link and nothing of its target; the user's may link
// anywhere.
func TestProjectFileStaysInside(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "credentials"), []byte("aws_secret_access_key = "+secret+"\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "harness.toml"), []byte("[enforcement]\nmode = \"shadow\"\n"), 0o644)
	root := filepath.Join(dir, "repo")
	user := filepath.Join(dir, "home", ".lean-ctx", FileName)
	project := filepath.Join(root, ".lean-ctx", FileName)
	for link, target := range map[string]string{project: filepath.Join(outside, "credentials"), user: filepath.Join(outside, "harness.toml")} {
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(Files{User: user, Root: root, Project: []string{project}})
	if err == nil || !strings.HasPrefix(err.Error(), project+": refused: a symbolic link that leads out of") || strings.Contains(err.Error(), secret[:8]) || strings.Contains(err.Error(), "credentials") {
		t.Errorf("a project file linking out: %v", err)
	}
	c, err := Load(Files{User: user, Root: root})
	if err != nil || c.Mode != Shadow {
		t.Errorf("a user's file may be a link: %+v %v", c, err)
	}
}

// No error of a harness.toml quotes more of it than the offending token,
// and that cut short: a long value, key or name is not printed whole.
func TestErrorsQuoteLittle(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLEwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	q := `"` + secret + `"`
	for _, tt := range []struct{ name, user, project string }{
		{"a duration", "[ledger]\nttl = " + q + "\n", ""},
		{"a mode", "[enforcement]\nmode = " + q + "\n", ""},
		{"a default role", "[enforcement]\ndefault_role = " + q + "\n", ""},
		{"a shell tool", "", "[tools]\nshell = [" + q[:20] + " " + q[20:] + "]\n"},
		{"a log mask", "", "[log]\nmask = [" + q + "]\n"},
		{"a gateway prefix", "[gateway]\nprefix = " + q + "\n", ""},
		{"a hook permission", "[hook]\nallow = " + q + "\n", ""},
		{"a hook tool's key", "[hook.tools]\n" + q + " = 1\n", ""},
		{"a model's name", "[cost.models." + q + "]\nprice = 1\n", ""},
		{"a model's key", "[cost.models.m]\n" + q + " = 1\n", ""},
		{"an agent's name", "[agents." + q + "]\n", ""},
		{"an agent's key", "[agents.a]\n" + q + " = \"coder\"\n", ""},
		{"an agent's role", "[agents.a]\nrole = " + q + "\n", ""},
		{"an upstream's key", "[[upstream]]\nname = \"u\"\n" + q + " = 1\n", ""},
		{"an upstream's env", "[[upstream]]\nname = \"u\"\ncommand = \"x\"\nenv = {" + q + " = 1}\n", ""},
		{"a token's key", "[[gateway.tokens]]\nagent = \"a\"\n" + q + " = 1\n", ""},
		{"a token's role", "[[gateway.tokens]]\nagent = \"a\"\ntoken = \"0123456789abcdef\"\nrole = " + q + "\n", ""},
		{"an unknown key", "[ledger]\n" + q + " = 1\n", ""},
		{"an unknown key of a project", "", "[ledger]\n" + q + " = 1\n"},
		{"a bare value", "[ledger]\nurl = " + secret + "\n", ""},
	} {
		_, err := Load(Files{User: write(t, tt.user), Project: []string{write(t, tt.project)}})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
