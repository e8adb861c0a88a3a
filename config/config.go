// Package config reads harness.toml, the harness's configuration: where the
// ledger lives, the price table, which tools are shell tools and which are
// exempt, and the enforcement mode. Decoding is as strict as for role files:
// every unknown key, wrong type or bad value is an error with its file,
// line and column.
//
// The user's file (~/.lean-ctx/harness.toml) may set everything. A
// project's files (the harness.toml of each of its .lean-ctx layers) may
// only add shell tools: an agent that can edit its repository must not be
// able to loosen its own governance (turn on shadow mode, exempt a tool,
// point the ledger elsewhere, lower prices, mask what it did out of the
// logs).
package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentharness/harness/contract"
	"github.com/agentharness/harness/internal/confine"
	"github.com/agentharness/harness/internal/strict"
	"github.com/agentharness/harness/pricing"
	"github.com/agentharness/harness/roles"
)

// FileName is the configuration file's name, in a .lean-ctx directory.
const FileName = "harness.toml"

// Mode is the enforcement mode.
type Mode string

// Enforcement modes.
const (
	Enforce Mode = "enforce" // denies are enforced
	Shadow  Mode = "shadow"  // decide and record, but never deny
)

// Config is the resolved configuration.
type Config struct {
	// LedgerURL is the store of counters; "" means the embedded SQLite file
	// in the user's state directory.
	LedgerURL string
	// LedgerPrefix is the Redis key prefix; "" for the store's default.
	LedgerPrefix string
	LedgerTTL    time.Duration
	// LedgerTimeout bounds each operation on Redis; 0 for the store's
	// default.
	LedgerTimeout time.Duration
	// LedgerReplicas is how many Redis replicas must have a change before
	// it counts; nil for the store's default (one with Sentinel, else none).
	LedgerReplicas *int
	Mode           Mode
	DefaultRole    string
	ShellTools     []string
	ExemptTools    []string
	Prices         pricing.Prices
	// EventsFile and DecisionsFile are the JSONL logs; "" for the default
	// path in the user's state directory, Off to write none.
	EventsFile    string
	DecisionsFile string
	LogMaxBytes   int64
	LogMaxFiles   int
	// Mask lists decision-log input paths (JSON pointers) to erase.
	Mask []string
	// AgentRoles are the starting roles of agents, by agent name.
	AgentRoles map[string]string
	// AgentMaxRoles are the most privileged roles agents may switch
	// themselves into, by agent name ([agents.NAME] max_role, or the
	// max_role of the agent's gateway token).
	AgentMaxRoles map[string]string
	// Upstreams are the MCP servers `harness serve` fronts.
	Upstreams []Upstream
	// Prefix says when upstream tool names get "<upstream>__": auto (when
	// there are several upstreams), always, never.
	Prefix string
	// Tokens admit agents to the HTTP gateway.
	Tokens []Token
	// DefaultAgent is the agent of a stdio gateway's client when the
	// operator names none (--agent, $HARNESS_AGENT): [gateway]
	// default_agent, else "anonymous".
	DefaultAgent string
	// HookAllow is the permission decision the hook gives an allowed call:
	// "" (none: Claude Code's own permissions apply) or "allow".
	HookAllow string
	// HookTools map agent tools to harness tools, over the defaults.
	HookTools map[string]string
	// EditTools are the patterns of tools that change files ([tools]
	// edit), watched by the self-protection rules.
	EditTools []string
	// AgentBudgets are the agents' budgets across their sessions
	// ([agents.NAME.budget]; AnyAgent's, [agents."*".budget], for every
	// agent without one).
	AgentBudgets map[string]AgentBudget
	// Protect is off when [protect] enabled = false; ProtectPaths are more
	// files and directories it keeps from agents.
	ProtectOff   bool
	ProtectPaths []string
	// PolicyTimeout bounds one evaluation of the policy ([policy] timeout).
	PolicyTimeout time.Duration
	// HTTP are the HTTP gateway's limits ([gateway] max_body_mb,
	// body_timeout, session_idle, max_sessions, max_requests,
	// max_pending_mb, origins, hosts); zero
	// values leave the gateway's defaults.
	HTTP HTTPLimits
	// Charge are the estimates of what is not text ([charge]); zero values
	// leave the gateway's defaults.
	Charge ChargeEstimates
	// MetricsToken and MetricsTokenSHA256 are the bearer token /metrics
	// wants ([metrics] token, token_sha256; "" for none).
	MetricsToken, MetricsTokenSHA256 string
	// Alerts are the webhooks that chosen events are sent to
	// ([[alerts]]; the user's file alone may set them).
	Alerts []Alert
	// RoleRefs are the places that name a role, for checking them against
	// the roles there are (the configuration does not know the roles).
	RoleRefs []RoleRef
	// Places are where the files set each key, by its dotted path
	// ("ledger.url"; the last file's when several set it): for errors a
	// later check finds in a value, such as a ledger URL no store opens.
	Places map[string]Place
	// Files are the configuration files that were read, in order.
	Files []string
}

// DefaultAgent is the agent of clients the operator names no agent for.
const DefaultAgent = "anonymous"

// AnyAgent is the agent name of [agents."*"]: every agent without a table
// of its own.
const AnyAgent = "*"

// DefaultPolicyTimeout bounds one evaluation of the policy when [policy]
// timeout is not set.
const DefaultPolicyTimeout = time.Second

// AgentBudget is one [agents.NAME.budget]: limits across all the agent's
// sessions in a period. A nil limit leaves that dimension unbounded.
type AgentBudget struct {
	// Period is "day", "week", "month" (UTC) or "total".
	Period                    string
	Tokens, Shell, CostMicros *int64
	WarnPercent, BlockPercent int64
}

// HTTPLimits are the HTTP gateway's limits.
type HTTPLimits struct {
	MaxBody                  int64
	BodyTimeout, SessionIdle time.Duration
	MaxSessions, MaxRequests int
	MaxPending               int64
	// Origins and Hosts are the Origin and Host headers accepted (nil:
	// the gateway's defaults).
	Origins, Hosts []string
}

// ChargeEstimates are [charge]: the tokens of images, audio and binary
// data that reach the agent.
type ChargeEstimates struct {
	ImagePixelsPerToken, MaxImageTokens, AudioTokensPerKB, BlobTokensPerKB int64
}

// Alert is one [[alerts]] of harness.toml: a webhook and the events it
// gets. Zero values leave the alerts' defaults.
type Alert struct {
	// Name names it in logs and metrics (default "alerts.N"); the URL,
	// a secret for some receivers, is never shown.
	Name string
	URL  string
	// Events are the event types sent (nil: all).
	Events []string
	// Format is "json" (the event as the events log has it) or "slack"
	// ({"text": ...}); "" for json.
	Format string
	// Headers are sent with each POST.
	Headers map[string]string
	// Queue bounds the events waiting to be sent.
	Queue int
	// Timeout bounds one POST; RetryFor, how long one event is retried.
	Timeout, RetryFor time.Duration
}

// AlertEvents are the event types an alert may send.
var AlertEvents = []string{"BudgetWarning", "BudgetExhausted", "PolicyViolation", "RoleChanged", "BudgetReset", "ApprovalRequested"}

// Upstream is one [[upstream]] of harness.toml: a stdio command or a URL.
type Upstream struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
}

// Token is one [[gateway.tokens]]: a bearer token (or its SHA-256) naming
// an agent, the role its new sessions start in, and the most privileged
// role it may switch itself into.
type Token struct {
	Agent   string
	Token   string
	SHA256  string
	Role    string
	MaxRole string
	// ClientSessions lets the token's client name its sessions
	// (X-Harness-Session); without it the gateway issues them.
	ClientSessions bool
	// Operator lets the token see every agent's sessions in the live view
	// (/ui); an agent's token sees only its agent's. An operator token
	// without an agent is for the live view alone: the gateway admits no
	// MCP client with it.
	Operator bool
}

// Place is where a file sets a key.
type Place struct {
	// Key is the key's dotted path: "enforcement.default_role",
	// "agents.NAME.role", "gateway.tokens[2].max_role" (the second token).
	Key  string
	File string
	Line int
	Col  int
}

// Errorf is an error about the key, at its place.
func (p Place) Errorf(format string, args ...any) *strict.Error {
	return &strict.Error{File: p.File, Line: p.Line, Col: p.Col, Key: p.Key, Msg: p.Key + ": " + fmt.Sprintf(format, args...)}
}

// RoleRef is one place of the configuration that names a role.
type RoleRef struct {
	Role string
	// Agent is the agent the role is for; "" for the default role.
	Agent string
	// Max is true for a most privileged role (max_role), false for a
	// starting role.
	Max bool
	Place
}

// Off as a log path turns that log off.
const Off = "off"

// Default is the configuration without any file.
func Default() Config {
	return Config{
		Mode:          Enforce,
		DefaultRole:   roles.DefaultRole,
		ShellTools:    slices.Clone(contract.DefaultShellTools),
		ExemptTools:   slices.Clone(contract.DefaultExemptTools),
		Prices:        pricing.Default(),
		LogMaxBytes:   10 << 20,
		LogMaxFiles:   5,
		Mask:          []string{},
		AgentRoles:    map[string]string{},
		AgentMaxRoles: map[string]string{},
		Prefix:        "auto",
		DefaultAgent:  DefaultAgent,
		HookTools:     map[string]string{},
		EditTools:     slices.Clone(contract.DefaultEditTools),
		AgentBudgets:  map[string]AgentBudget{},
		ProtectPaths:  []string{},
		PolicyTimeout: DefaultPolicyTimeout,
		Places:        map[string]Place{},
	}
}

// Files are the harness.toml files of a load: the user's and those of the
// project's layers.
type Files struct {
	// User is the user's file (~/.lean-ctx/harness.toml), or "".
	User string
	// Root is the project root: no project file is read through a
	// symbolic link that leads out of it, or out of the file's .lean-ctx
	// directory. Without it, each project file is held to its directory.
	Root string
	// Project are the files of the project's layers
	// (<layer>/harness.toml), the root's first. Each may only add shell
	// tools and log masks.
	Project []string
}

// FindFiles returns where the user's and the project's harness.toml are,
// for a home directory and the project root and its layers (the .lean-ctx
// directories of roles.ProjectLayers); any may be empty.
func FindFiles(home, root string, layers []string) Files {
	f := Files{Root: root}
	if home != "" {
		f.User = filepath.Join(home, ".lean-ctx", FileName)
	}
	for _, layer := range layers {
		f.Project = append(f.Project, filepath.Join(layer, FileName))
	}
	return f
}

// Load reads the user's file and the project's, any of which may be
// missing: the user's sets everything, each of the project's only adds.
func Load(files Files) (Config, error) {
	c := Default()
	var errs strict.ErrorList
	type file struct {
		path    string
		project bool
	}
	all := []file{{files.User, false}}
	for _, p := range files.Project {
		all = append(all, file{p, true})
	}
	for _, f := range all {
		if f.path == "" || (f.project && f.path == files.User) {
			continue
		}
		root := ""
		if f.project {
			if root = files.Root; root == "" {
				root = filepath.Dir(f.path)
			}
		}
		src, ok, err := confine.ReadFile(root, f.path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		errs = append(errs, c.apply(f.path, src, f.project)...)
		c.Files = append(c.Files, f.path)
	}
	for _, t := range c.RoleRefs { // the tokens' max_role, after every [agents.NAME] max_role
		if !t.Max || !strings.HasPrefix(t.Key, "gateway.tokens") {
			continue
		}
		if m, ok := c.AgentMaxRoles[t.Agent]; ok && m != t.Role {
			errs = append(errs, t.Errorf("agent %s: max_role %q, but %q elsewhere: an agent has one most privileged role", t.Agent, t.Role, m))
			continue
		}
		c.AgentMaxRoles[t.Agent] = t.Role
	}
	if _, err := c.Prices.Price(""); err != nil {
		at, ok := c.Places["cost.default_model"]
		if !ok {
			at = Place{Key: "cost.default_model", File: strings.Join(c.Files, ", ")}
		}
		errs = append(errs, at.Errorf("%v", err))
	}
	if err := errs.Err(); err != nil {
		return Default(), err
	}
	return c, nil
}

// schema lists every key of harness.toml; "cost.models" is a table of
// tables checked on its own.
var schema = map[string][]string{
	"ledger":      {"url", "prefix", "ttl", "timeout", "replicas"},
	"enforcement": {"mode", "default_role"},
	"tools":       {"shell", "exempt", "edit"},
	"protect":     {"enabled", "paths"},
	"policy":      {"timeout"},
	"cost":        {"default_model", "models"},
	"log":         {"events", "decisions", "max_size_mb", "max_files", "mask"},
	"agents":      nil, // [agents.NAME] tables, checked on their own
	"gateway":     {"prefix", "tokens", "default_agent", "max_body_mb", "body_timeout", "session_idle", "max_sessions", "max_requests", "max_pending_mb", "origins", "hosts"},
	"charge":      {"image_pixels_per_token", "max_image_tokens", "audio_tokens_per_kb", "blob_tokens_per_kb"},
	"hook":        {"allow", "tools"},
	"upstream":    nil, // [[upstream]] tables, checked on their own
	"metrics":     {"token", "token_sha256"},
	"alerts":      nil, // [[alerts]] tables, checked on their own
}

// projectKeys are the keys a project's file may set: they can only tighten.
// Log masks are not among them: a mask erases from the logs what the agent
// did, so only the user may choose them.
var projectKeys = []string{"tools.shell"}

func (c *Config) apply(file string, src []byte, project bool) strict.ErrorList {
	doc, perr := strict.Decode(file, src)
	if perr != nil {
		return strict.ErrorList{perr}
	}
	var errs strict.ErrorList
	fail := func(key, format string, args ...any) { errs = append(errs, doc.Errorf(key, format, args...)) }
	// failAt reports err about the key at path, at the key below it that
	// err names (see placed).
	failAt := func(path string, err error) {
		at := path
		var p *placed
		if errors.As(err, &p) {
			at += p.sub
		}
		fail(at, "%s: %v", path, err)
	}
	place := func(key string) Place {
		p := doc.Pos.Of(key)
		return Place{Key: key, File: file, Line: p.Line, Col: p.Col}
	}
	ref := func(key, role, agent string, max bool) {
		c.RoleRefs = append(c.RoleRefs, RoleRef{Role: role, Agent: agent, Max: max, Place: place(key)})
	}
	for _, section := range strict.SortedKeys(doc.Values) {
		keys, ok := schema[section]
		if !ok {
			errs = append(errs, doc.Unknown(section, section, "", strict.SortedKeys(schema)))
			continue
		}
		if section == "upstream" {
			if project {
				fail(section, "[[upstream]] may only be set in the user's %s: a cloned repository must not start programs", FileName)
				continue
			}
			if err := c.setUpstreams(doc.Values[section]); err != nil {
				failAt(section, err)
			}
			continue
		}
		if section == "alerts" {
			if project {
				fail(section, "[[alerts]] may only be set in the user's %s: a cloned repository must not send what its agents do elsewhere", FileName)
				continue
			}
			errs = append(errs, c.setAlerts(doc)...)
			continue
		}
		table, ok := doc.Values[section].(map[string]any)
		if !ok {
			fail(section, "%q must be a table ([%s]), not %s", section, section, strict.TypeName(doc.Values[section]))
			continue
		}
		if section == "agents" {
			if project {
				fail(section, "[agents] may only be set in the user's %s: a project must not choose the roles its agents start in", FileName)
				continue
			}
			for _, name := range strict.SortedKeys(table) {
				key, err := c.setAgent(name, table[name])
				if err != nil {
					fail(key, "%s: %v", strict.Cut(key), err)
					continue
				}
				c.Places["agents."+name] = place("agents." + name)
				for _, key := range strict.SortedKeys(table[name].(map[string]any)) {
					if role, ok := table[name].(map[string]any)[key].(string); ok {
						ref("agents."+name+"."+key, role, name, key == "max_role")
					}
				}
			}
			continue
		}
		for _, key := range strict.SortedKeys(table) {
			path := section + "." + key
			v := table[key]
			if !slices.Contains(keys, key) {
				errs = append(errs, doc.Unknown(path, key, section, keys))
				continue
			}
			if project && !slices.Contains(projectKeys, path) {
				why := "an agent that edits its repository must not loosen its own governance"
				if path == "log.mask" {
					why = "an agent that edits its repository must not erase what it did from the logs"
				}
				fail(path, "%s may only be set in the user's %s: a project's file may only add shell tools (%s)", path, FileName, why)
				continue
			}
			if err := c.set(path, v, project); err != nil {
				failAt(path, err)
				continue
			}
			c.Places[path] = place(path)
			switch path {
			case "enforcement.default_role":
				ref(path, c.DefaultRole, "", false)
			case "gateway.tokens":
				added := c.Tokens[len(c.Tokens)-len(v.([]map[string]any)):]
				for i, t := range added {
					at := fmt.Sprintf("%s[%d].", path, i+1)
					if t.Role != "" {
						ref(at+"role", t.Role, t.Agent, false)
					}
					if t.MaxRole != "" {
						ref(at+"max_role", t.MaxRole, t.Agent, true)
					}
				}
			}
		}
	}
	return errs
}

func (c *Config) set(path string, v any, project bool) error {
	switch path {
	case "ledger.url":
		s, err := nonEmpty(v)
		c.LedgerURL = s
		return err
	case "ledger.prefix":
		s, ok := v.(string)
		if !ok {
			return strict.WantType("a string", v)
		}
		c.LedgerPrefix = s
	case "ledger.ttl":
		s, ok := v.(string)
		if !ok {
			return strict.WantType(`a duration such as "720h"`, v)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || (d > 0 && d < time.Second) {
			return fmt.Errorf("%s: want a duration of at least 1s, such as \"720h\", or \"0\" to keep counters forever", strict.Quote(s))
		}
		c.LedgerTTL = d
	case "ledger.timeout":
		s, ok := v.(string)
		if !ok {
			return strict.WantType(`a duration such as "2s"`, v)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			return fmt.Errorf("%s: want a duration from 10ms to 1m, such as \"2s\"", strict.Quote(s))
		}
		c.LedgerTimeout = d
	case "ledger.replicas":
		n, ok := v.(int64)
		if !ok || n < 0 || n > 100 {
			return fmt.Errorf("%s: want a whole number from 0 to 100", strict.TypeName(v))
		}
		r := int(n)
		c.LedgerReplicas = &r
	case "enforcement.mode":
		s, _ := v.(string)
		switch Mode(s) {
		case Enforce, Shadow:
			c.Mode = Mode(s)
		default:
			return fmt.Errorf("%s: want \"enforce\" or \"shadow\"", strict.TypeName(v))
		}
	case "enforcement.default_role":
		s, ok := v.(string)
		if !ok || !roles.ValidName(s) {
			return fmt.Errorf("%s is not a role name", strict.TypeName(v))
		}
		c.DefaultRole = s
	case "tools.edit":
		list, err := strings_(v)
		if err != nil {
			return err
		}
		for i, p := range list {
			if !roles.ValidPattern(p) {
				return fmt.Errorf("item %d: %q is not a tool pattern", i+1, p)
			}
		}
		c.EditTools = list
	case "protect.enabled":
		b, ok := v.(bool)
		if !ok {
			return strict.WantType("true or false", v)
		}
		c.ProtectOff = !b
	case "protect.paths":
		list, err := strings_(v)
		if err != nil {
			return err
		}
		for i, p := range list {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("item %d: %q is not an absolute path", i+1, p)
			}
			c.ProtectPaths = append(c.ProtectPaths, filepath.Clean(p))
		}
	case "policy.timeout":
		s, ok := v.(string)
		if !ok {
			return strict.WantType(`a duration such as "250ms"`, v)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Millisecond || d > time.Minute {
			return fmt.Errorf("%q: want a duration from 1ms to 1m, such as \"250ms\"", s)
		}
		c.PolicyTimeout = d
	case "tools.shell", "tools.exempt":
		names, err := toolNames(v)
		if err != nil {
			return err
		}
		switch {
		case path == "tools.exempt":
			c.ExemptTools = names
		case project: // a project adds shell tools, never removes them
			for _, n := range names {
				if !slices.Contains(c.ShellTools, n) {
					c.ShellTools = append(c.ShellTools, n)
				}
			}
		default:
			c.ShellTools = names
		}
	case "log.events", "log.decisions":
		p, err := nonEmpty(v)
		if err != nil {
			return err
		}
		if path == "log.events" {
			c.EventsFile = p
		} else {
			c.DecisionsFile = p
		}
	case "log.max_size_mb", "log.max_files":
		n, ok := v.(int64)
		if !ok || n < 1 || n > 1<<20 {
			return fmt.Errorf("%s: want a whole number from 1 to %d", strict.TypeName(v), 1<<20)
		}
		if path == "log.max_size_mb" {
			c.LogMaxBytes = n << 20
		} else {
			c.LogMaxFiles = int(n)
		}
	case "log.mask":
		list, ok := v.([]any)
		if !ok {
			return strict.WantType("an array of JSON pointers such as \"/arguments/password\"", v)
		}
		for i, item := range list {
			p, ok := item.(string)
			if !ok || !strings.HasPrefix(p, "/") || len(p) < 2 || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
				return fmt.Errorf("item %d: %s is not a JSON pointer such as \"/arguments/password\"", i+1, strict.TypeName(item))
			}
			if !slices.Contains(c.Mask, p) {
				c.Mask = append(c.Mask, p)
			}
		}
	case "gateway.prefix":
		p, _ := v.(string)
		if p != "auto" && p != "always" && p != "never" {
			return fmt.Errorf("%s: want \"auto\", \"always\" or \"never\"", strict.TypeName(v))
		}
		c.Prefix = p
	case "gateway.tokens":
		return c.setTokens(v)
	case "metrics.token":
		s, ok := v.(string)
		if !ok || len(s) < 16 {
			return errors.New("want a token of at least 16 characters")
		}
		c.MetricsToken = s
		if c.MetricsTokenSHA256 != "" {
			return errors.New("give token or token_sha256, one of them")
		}
	case "metrics.token_sha256":
		s, ok := v.(string)
		if !ok || !regexp.MustCompile(`^[0-9a-fA-F]{64}$`).MatchString(s) {
			return errors.New("want the token's SHA-256, 64 hex digits")
		}
		c.MetricsTokenSHA256 = s
		if c.MetricsToken != "" {
			return errors.New("give token or token_sha256, one of them")
		}
	case "gateway.max_body_mb":
		n, err := wholeNumber(v, 1, 1024)
		c.HTTP.MaxBody = n << 20
		return err
	case "gateway.max_sessions":
		n, err := wholeNumber(v, 1, 1<<20)
		c.HTTP.MaxSessions = int(n)
		return err
	case "gateway.max_requests":
		n, err := wholeNumber(v, 1, 1<<20)
		c.HTTP.MaxRequests = int(n)
		return err
	case "gateway.max_pending_mb":
		n, err := wholeNumber(v, 1, 1<<20)
		c.HTTP.MaxPending = n << 20
		return err
	case "gateway.body_timeout", "gateway.session_idle":
		s, ok := v.(string)
		if !ok {
			return strict.WantType(`a duration such as "30s"`, v)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 7*24*time.Hour {
			return fmt.Errorf("%s: want a duration from 1s to 168h, such as \"30s\" or \"30m\"", strict.Quote(s))
		}
		if path == "gateway.body_timeout" {
			c.HTTP.BodyTimeout = d
		} else {
			c.HTTP.SessionIdle = d
		}
	case "gateway.origins", "gateway.hosts":
		list, err := strings_(v)
		if err != nil {
			return err
		}
		for i, x := range list {
			if x == "" || strings.ContainsAny(x, " \t\n/") && path == "gateway.hosts" || path == "gateway.origins" && x != "*" && !strings.Contains(x, "://") {
				return fmt.Errorf("item %d: %s is not %s", i+1, strict.Quote(x), map[string]string{"gateway.hosts": "a host name", "gateway.origins": `an origin such as "https://app.example:*"`}[path])
			}
		}
		if path == "gateway.hosts" {
			c.HTTP.Hosts = list
		} else {
			c.HTTP.Origins = list
		}
	case "charge.image_pixels_per_token", "charge.max_image_tokens", "charge.audio_tokens_per_kb", "charge.blob_tokens_per_kb":
		n, err := wholeNumber(v, 1, 1<<30)
		switch path {
		case "charge.image_pixels_per_token":
			c.Charge.ImagePixelsPerToken = n
		case "charge.max_image_tokens":
			c.Charge.MaxImageTokens = n
		case "charge.audio_tokens_per_kb":
			c.Charge.AudioTokensPerKB = n
		default:
			c.Charge.BlobTokensPerKB = n
		}
		return err
	case "gateway.default_agent":
		s, err := nonEmpty(v)
		if err != nil {
			return err
		}
		if len(s) > 256 || strings.ContainsFunc(s, unicode.IsControl) {
			return errors.New("want an agent name of at most 256 bytes, without control characters")
		}
		c.DefaultAgent = s
	case "hook.allow":
		switch v {
		case "allow", "pass":
			c.HookAllow = strings.TrimPrefix(v.(string), "pass")
		default:
			return fmt.Errorf("%s: want \"pass\" (Claude Code's own permissions apply) or \"allow\"", strict.TypeName(v))
		}
	case "hook.tools":
		m, ok := v.(map[string]any)
		if !ok {
			return strict.WantType("a table of agent tool = harness tool", v)
		}
		for k, x := range m {
			s, ok := x.(string)
			if !ok || s == "" {
				return fmt.Errorf("%s: %w", strict.Cut(k), strict.WantType("a tool name", x))
			}
			c.HookTools[k] = s
		}
	case "cost.default_model":
		s, err := nonEmpty(v)
		c.Prices.DefaultModel = s
		return err
	case "cost.models":
		return c.setModels(v)
	}
	return nil
}

// setUpstreams reads [[upstream]]: name and command (with args and env),
// or name and url.
func (c *Config) setUpstreams(v any) error {
	list, ok := v.([]map[string]any)
	if !ok {
		return strict.WantType("an array of tables ([[upstream]])", v)
	}
	names := map[string]bool{}
	for i, t := range list {
		var u Upstream
		for _, key := range strict.SortedKeys(t) {
			var err error
			switch key {
			case "name":
				u.Name, err = nonEmpty(t[key])
			case "command":
				u.Command, err = nonEmpty(t[key])
			case "url":
				u.URL, err = nonEmpty(t[key])
			case "args":
				u.Args, err = strings_(t[key])
			case "env":
				m, ok := t[key].(map[string]any)
				if !ok {
					err = strict.WantType("a table of strings", t[key])
					break
				}
				u.Env = map[string]string{}
				for k, val := range m {
					s, ok := val.(string)
					if !ok {
						err = fmt.Errorf("env.%s: %w", strict.Cut(k), strict.WantType("a string", val))
						break
					}
					u.Env[k] = s
				}
			default:
				msg := fmt.Sprintf("unknown key %s", strict.Quote(key))
				if s := strict.Suggest(key, []string{"name", "command", "args", "env", "url"}); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				err = errors.New(msg)
			}
			if err != nil {
				return item(i, key, fmt.Errorf("%d: %s: %w", i+1, strict.Cut(key), err))
			}
		}
		switch {
		case u.Name == "" || !roles.ValidName(u.Name) || strings.Contains(u.Name, "__"):
			return item(i, "name", fmt.Errorf("%d: name: want a name of A-Z, a-z, 0-9, '_' and '-' without \"__\"", i+1))
		case names[u.Name]:
			return item(i, "name", fmt.Errorf("%d: name %q is used twice", i+1, u.Name))
		case (u.Command == "") == (u.URL == ""):
			return item(i, "", fmt.Errorf("%d (%s): give a command or a url, not both", i+1, u.Name))
		}
		names[u.Name] = true
		c.Upstreams = append(c.Upstreams, u)
	}
	return nil
}

func strings_(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, strict.WantType("an array of strings", v)
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, strict.WantType("a string", item)
		}
		out = append(out, s)
	}
	return out, nil
}

// setTokens reads [[gateway.tokens]]: agent, token or token_sha256, role,
// max_role, client_sessions, operator.
func (c *Config) setTokens(v any) error {
	list, ok := v.([]map[string]any)
	if !ok {
		return strict.WantType("an array of tables ([[gateway.tokens]])", v)
	}
	for i, t := range list {
		var tok Token
		for _, key := range strict.SortedKeys(t) {
			if key == "client_sessions" || key == "operator" {
				b, ok := t[key].(bool)
				if !ok {
					return item(i, key, fmt.Errorf("%d: %s: %w", i+1, key, strict.WantType("true or false", t[key])))
				}
				if key == "operator" {
					tok.Operator = b
				} else {
					tok.ClientSessions = b
				}
				continue
			}
			s, ok := t[key].(string)
			if !ok || s == "" {
				return item(i, key, fmt.Errorf("%d: %s: %w", i+1, strict.Cut(key), strict.WantType("a non-empty string", t[key])))
			}
			switch key {
			case "agent":
				tok.Agent = s
			case "token":
				tok.Token = s
			case "token_sha256":
				tok.SHA256 = s
			case "role", "max_role":
				if !roles.ValidName(s) {
					return item(i, key, fmt.Errorf("%d: %s: %s is not a role name", i+1, key, strict.Quote(s)))
				}
				if key == "role" {
					tok.Role = s
				} else {
					tok.MaxRole = s
				}
			default:
				return item(i, key, fmt.Errorf("%d: unknown key %s (want agent, token or token_sha256, role, max_role, client_sessions, operator)", i+1, strict.Quote(key)))
			}
		}
		who := tok.Agent
		if who == "" {
			who = "operator"
		}
		switch {
		case tok.Agent == "" && !tok.Operator:
			return item(i, "", fmt.Errorf("%d: agent is missing (or operator = true, for a token of the live view alone)", i+1))
		case tok.Agent == "" && (tok.Role != "" || tok.MaxRole != "" || tok.ClientSessions):
			key := "role"
			if tok.MaxRole != "" {
				key = "max_role"
			} else if tok.ClientSessions {
				key = "client_sessions"
			}
			return item(i, key, fmt.Errorf("%d: %s is for an agent's token: this operator token names no agent", i+1, key))
		case (tok.Token == "") == (tok.SHA256 == ""):
			return item(i, "", fmt.Errorf("%d (%s): give token or token_sha256, one of them", i+1, who))
		case tok.SHA256 != "" && !regexp.MustCompile(`^[0-9a-fA-F]{64}$`).MatchString(tok.SHA256):
			return item(i, "token_sha256", fmt.Errorf("%d (%s): token_sha256 must be 64 hex digits", i+1, who))
		case tok.Token != "" && len(tok.Token) < 16:
			return item(i, "token", fmt.Errorf("%d (%s): a token must have at least 16 characters", i+1, who))
		}
		c.Tokens = append(c.Tokens, tok)
	}
	return nil
}

// setAgent reads [agents.NAME]: role = "reviewer" (its sessions' starting
// role), max_role = "coder" (the most privileged role it may switch itself
// into), and [agents.NAME.budget] (its budget across its sessions). On an
// error it returns the key at fault.
func (c *Config) setAgent(name string, v any) (string, error) {
	at := "agents." + name
	t, ok := v.(map[string]any)
	if !ok {
		return at, strict.WantType("a table ([agents.NAME] with role = \"...\")", v)
	}
	if len(t) == 0 {
		return at, errors.New("give role, max_role, budget or several")
	}
	for _, key := range strict.SortedKeys(t) {
		switch key {
		case "budget":
			b, sub, err := agentBudget(t[key])
			if err != nil {
				return at + ".budget" + sub, err
			}
			c.AgentBudgets[name] = b
			continue
		case "role", "max_role":
		default:
			msg := fmt.Sprintf("unknown key %s (want role, max_role, budget)", strict.Quote(key))
			if s := strict.Suggest(key, []string{"role", "max_role", "budget"}); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return at + "." + key, errors.New(msg)
		}
		if name == AnyAgent {
			return at + "." + key, fmt.Errorf("[agents.\"*\"] may only hold a budget: every agent's starting role is [enforcement] default_role")
		}
		role, ok := t[key].(string)
		if !ok || !roles.ValidName(role) {
			return at + "." + key, fmt.Errorf("want a role name, got %s", strict.TypeName(t[key]))
		}
		if key == "role" {
			c.AgentRoles[name] = role
		} else {
			c.AgentMaxRoles[name] = role
		}
	}
	return at, nil
}

// agentBudget reads [agents.NAME.budget]: period, the limits of the
// dimensions it bounds, and the warn and block percentages. On an error it
// returns the key at fault below the table (".period"), "" for the table.
func agentBudget(v any) (AgentBudget, string, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return AgentBudget{}, "", strict.WantType("a table ([agents.NAME.budget])", v)
	}
	b := AgentBudget{Period: "day", WarnPercent: 80, BlockPercent: 100}
	keys := []string{"period", "max_context_tokens", "max_shell_invocations", "max_cost_usd", "warn_at_percent", "block_at_percent"}
	for _, key := range strict.SortedKeys(t) {
		x := t[key]
		fail := func(format string, args ...any) (AgentBudget, string, error) {
			return b, "." + key, fmt.Errorf(format, args...)
		}
		switch key {
		case "period":
			p, _ := x.(string)
			if !slices.Contains([]string{"day", "week", "month", "total"}, p) {
				return fail("%s: want \"day\", \"week\", \"month\" or \"total\"", strict.TypeName(x))
			}
			b.Period = p
		case "max_context_tokens", "max_shell_invocations":
			n, ok := x.(int64)
			if !ok || n < 0 {
				return fail("want a whole number >= 0, got %s", strict.TypeName(x))
			}
			if key == "max_context_tokens" {
				b.Tokens = &n
			} else {
				b.Shell = &n
			}
		case "max_cost_usd":
			m, err := strict.Micros(x, "an amount in US dollars", 1e9)
			if err != nil {
				return fail("%w", err)
			}
			b.CostMicros = &m
		case "warn_at_percent":
			n, ok := x.(int64)
			if !ok || n < 0 || n > 100 {
				return fail("want 0 to 100, got %s", strict.TypeName(x))
			}
			b.WarnPercent = n
		case "block_at_percent":
			n, ok := x.(int64)
			if !ok || !(n >= 1 && n <= 100 || n == 255) {
				return fail("want 1 to 100, or 255 to never block, got %s", strict.TypeName(x))
			}
			b.BlockPercent = n
		default:
			msg := fmt.Sprintf("unknown key %s", strict.Quote(key))
			if s := strict.Suggest(key, keys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return fail("%s", msg)
		}
	}
	if b.Tokens == nil && b.Shell == nil && b.CostMicros == nil {
		return b, "", errors.New("give at least one of max_context_tokens, max_shell_invocations, max_cost_usd")
	}
	if b.BlockPercent <= 100 && b.WarnPercent > b.BlockPercent {
		at := ".warn_at_percent"
		if _, ok := t["warn_at_percent"]; !ok {
			at = ".block_at_percent"
		}
		return b, at, fmt.Errorf("warn_at_percent %d is above block_at_percent %d: the budget would block before it warns", b.WarnPercent, b.BlockPercent)
	}
	return b, "", nil
}

func (c *Config) setModels(v any) error {
	models, ok := v.(map[string]any)
	if !ok {
		return strict.WantType("a table of models ([cost.models.NAME])", v)
	}
	for _, name := range strict.SortedKeys(models) {
		m, ok := models[name].(map[string]any)
		if !ok {
			return &placed{"." + name, fmt.Errorf("model %s: %w", strict.Quote(name), strict.WantType("a table", models[name]))}
		}
		var p pricing.Price
		fields := map[string]*int64{
			"input_usd_per_mtok":          &p.InputMicrosPerMTok,
			"output_usd_per_mtok":         &p.OutputMicrosPerMTok,
			"cache_write_usd_per_mtok":    &p.CacheWriteMicrosPerMTok,
			"cache_write_1h_usd_per_mtok": &p.CacheWrite1hMicrosPerMTok,
			"cache_read_usd_per_mtok":     &p.CacheReadMicrosPerMTok,
		}
		for _, key := range strict.SortedKeys(m) {
			dst, ok := fields[key]
			if !ok {
				msg := fmt.Sprintf("model %s: unknown key %s", strict.Quote(name), strict.Quote(key))
				if s := strict.Suggest(key, strict.SortedKeys(fields)); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return &placed{"." + name + "." + key, errors.New(msg)}
			}
			micros, err := strict.Micros(m[key], "a price in US dollars", 1e6)
			if err != nil {
				return &placed{"." + name + "." + key, fmt.Errorf("model %s: %s: %w", strict.Quote(name), key, err)}
			}
			*dst = micros
		}
		for _, key := range []string{"input_usd_per_mtok", "output_usd_per_mtok"} {
			if _, ok := m[key]; !ok {
				return &placed{"." + name, fmt.Errorf("model %s: %s is missing", strict.Quote(name), key)}
			}
		}
		c.Prices.Models[name] = p
	}
	return nil
}

// placed is an error about a key below the one being set, which says
// where it is: sub is its path below that key ("[2].max_role", the second
// table's max_role; ".x.input_usd_per_mtok"). The message is err's.
type placed struct {
	sub string
	err error
}

func (p *placed) Error() string { return p.err.Error() }
func (p *placed) Unwrap() error { return p.err }

// item is an error about key of the i-th (from 0) table of an array of
// tables, placed there.
func item(i int, key string, err error) error {
	sub := fmt.Sprintf("[%d]", i+1)
	if key != "" {
		sub += "." + key
	}
	return &placed{sub: sub, err: err}
}

func nonEmpty(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", strict.WantType("a string", v)
	}
	if s == "" {
		return "", errors.New("must not be empty")
	}
	return s, nil
}

// toolNames reads a list of exact tool names.
func toolNames(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, strict.WantType("an array of tool names", v)
	}
	out := []string{}
	for i, item := range list {
		s, ok := item.(string)
		if !ok || !roles.ValidPattern(s) || strings.Contains(s, "*") {
			return nil, fmt.Errorf("item %d: %s is not a tool name (exact names only, no '*')", i+1, strict.TypeName(item))
		}
		out = append(out, s)
	}
	return out, nil
}

// wholeNumber reads an integer from lo to hi.
func wholeNumber(v any, lo, hi int64) (int64, error) {
	n, ok := v.(int64)
	if !ok || n < lo || n > hi {
		return 0, fmt.Errorf("%s: want a whole number from %d to %d", strict.TypeName(v), lo, hi)
	}
	return n, nil
}
