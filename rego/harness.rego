# METADATA
# title: Agent Harness decision
# description: |
#   Decides allow, warn, ask or deny for one tool call of an agent, from the
#   compiled roles (data.harness.roles), the agents' budgets
#   (data.harness.agents), the configuration (data.harness.config) and the
#   call (input: role, tool, upstream, upstream_tool, arguments,
#   shell_policy, budget, agent_budget, session, agent, project). Entry
#   points:
#   data.harness.decision (one call), data.harness.status (a session's
#   budget, without a call), data.harness.levels (the levels of usages, to
#   tell crossings), data.harness.visible (the tools a role may
#   call, for listings), data.harness.explanation (why, for people); the
#   role switch rules are in switch.rego. Rules are numbered as in section 4
#   of the harness contract; the surfaces (CLI, gateway, hook) ask these
#   entry points rather than repeat a rule.
package harness

# The version of the compiled data document this policy reads.
supported_schema := 4

# -- The call ---------------------------------------------------------------

role_name := input.role if is_string(input.role)

else := ""

tool := input.tool if is_string(input.tool)

else := ""

# Where the tool comes from: the upstream MCP server ("" for the harness's
# own tools) and that server's own name for it. A tool is a shell tool, or
# denied, by either of its names; it is allowed by the name the agent
# called it by.
upstream := input.upstream if is_string(input.upstream)

else := ""

upstream_tool := input.upstream_tool if is_string(input.upstream_tool)

else := ""

role := data.harness.roles[role_name]

shell_policy := role.shell_policy

default shell_policy := ""

# Usage before this call, per dimension (money in integer micro-dollars),
# when the budget is well formed: the common case, checked in one rule.
# Only when the input is not valid are the problems spelt out (invalid).
_checked_usage := {"tokens": t, "shell": s, "cost": c} if {
	b := _budget
	t := b.tokens
	is_number(t)
	t >= 0
	t == floor(t)
	s := b.shell
	is_number(s)
	s >= 0
	s == floor(s)
	c := b.cost_micros
	is_number(c)
	c >= 0
	c == floor(c)
}

valid_input if {
	data.harness.schema_version == supported_schema
	tool != ""
	role_name != ""
	is_object(_arguments)
	_checked_usage
	_agent_usage_given
}

# The arguments; absent or null is none.
_arguments := object.get(input, "arguments", {}) if input.arguments != null

else := {}

usage := _checked_usage

default usage := {"tokens": 0, "shell": 0, "cost": 0}

# The budget as given, absent keys 0.
_budget := object.union({"tokens": 0, "shell": 0, "cost_micros": 0}, b) if {
	b := object.get(input, "budget", {})
	is_object(b)
} else := "not an object"

_natural(n) if {
	is_number(n)
	n >= 0
	n == floor(n)
}

# Problems with the input or the data itself: the call is refused.
invalid contains msg if {
	data.harness.schema_version != supported_schema
	msg := sprintf("policy data has schema_version %v; this policy reads version %d (recompile the roles)", [data.harness.schema_version, supported_schema])
}

invalid contains "input.tool must be a non-empty string" if tool == ""

invalid contains "input.role must be a non-empty string" if role_name == ""

invalid contains "input.budget must be an object" if not is_object(_budget)

invalid contains msg if {
	some key in ["tokens", "shell", "cost_micros"]
	n := _budget[key]
	not _natural(n)
	msg := sprintf("input.budget.%s must be a whole number >= 0, got %v", [key, n])
}

invalid contains msg if {
	not is_object(_arguments)
	msg := sprintf("input.arguments must be an object, not %s", [type_name(_arguments)])
}

invalid contains msg if {
	not _agent_usage_given
	msg := sprintf("input.agent_budget must give the usage (tokens, shell, cost_micros: whole numbers >= 0) of agent '%v' in its budget period", [object.get(input, "agent", "")])
}

# -- Rule 1: exempt tools ----------------------------------------------------

# Only the harness's own tools are exempt: an upstream's tool is never.
exempt if _exempt(tool, upstream)

default exempt := false

_exempt(t, "") if data.harness.config.exempt_tools[t]

# A shell tool by either of its names (rule 3 and 7 apply to an upstream's
# ctx_shell exposed as lean__ctx_shell).
shell_tool if _is_shell(tool, upstream_tool)

default shell_tool := false

_is_shell(t, _) if data.harness.config.shell_tools[t]

_is_shell(_, ut) if data.harness.config.shell_tools[ut]

# -- Rule 2: tool lists ------------------------------------------------------

# matches(m, t) is true when tool t matches the compiled pattern list m,
# whose regex matches exactly the names the list does.
matches(m, t) if regex.match(m.regex, t)

tool_denied if _denies_call(role, tool, upstream_tool)

# Rule 2 for a tool of two names: a denied pattern that matches either
# denies; an allowed pattern must match the name the agent called.
_denies_call(r, t, _) if matches(r.denied, t)

_denies_call(r, _, ut) if {
	ut != ""
	matches(r.denied, ut)
}

tool_allowed if matches(role.allowed, tool)

access_reasons contains r if {
	not exempt
	tool_denied
	r := _reason("tool_denied", sprintf("tool '%s' is denied for role '%s'", [tool, role_name]))
}

access_reasons contains r if {
	not exempt
	not tool_denied
	not tool_allowed
	r := _reason("tool_not_allowed", sprintf("tool '%s' is not allowed for role '%s': no allowed pattern matches it", [tool, role_name]))
}

# -- Ask (contract section 8) ----------------------------------------------------

# A call that a pattern of the role's ask list matches, by either of its
# names (a server cannot rename a tool out of it), waits for a person's
# approval when the rules would allow it: its decision is "ask", not
# allowed until the person answers. Exempt tools are never asked for.
tool_asks if _asks_call(role, tool, upstream_tool)

_asks_call(r, t, _) if _asks(r, t)

_asks_call(r, _, ut) if {
	ut != ""
	_asks(r, ut)
}

_asks(r, t) if {
	r.ask.patterns != [] # most roles ask for nothing: skip the matching
	matches(r.ask, t)
}

ask_reasons contains r if {
	not exempt
	tool_asks
	r := _reason("approval_required", sprintf("tool '%s' needs a person's approval for role '%s'", [tool, role_name]))
}

# -- Rule 3: shell policy ----------------------------------------------------

shell_denied if {
	not exempt
	role
	not _shell_allowed(role, tool, upstream_tool)
}

# Rule 3 for any role and tool: a shell tool under shell_policy "deny" is
# refused.
_shell_allowed(_, t, ut) if not _is_shell(t, ut)

_shell_allowed(r, _, _) if r.shell_policy != "deny"

# A shell call under shell_policy "compress" is allowed, its output marked
# for compression.
compress_output if {
	shell_tool
	role.shell_policy == "compress"
}

default compress_output := false

# -- Rules 4 and 5: budget arithmetic ----------------------------------------

# The role's limits, and the usage thresholds the compiler derives from them
# exactly: used*100 >= limit*pct  <=>  used >= ceil(limit*pct/100). An
# unknown role has none (its calls are refused anyway).
limits := role.limits

default limits := {"tokens": 0, "shell": 0, "cost_micros": 0}

thresholds := role.thresholds

default thresholds := {
	"tokens": {"warn_at": 1, "admits": 0},
	"shell": {"warn_at": 1, "admits": 0},
	"cost": {"warn_at": 1, "admits": 0},
}

budget := {
	"tokens": dimension(usage.tokens, limits.tokens, thresholds.tokens),
	"shell": dimension(usage.shell, limits.shell, thresholds.shell),
	"cost": dimension(usage.cost, limits.cost_micros, thresholds.cost),
}

# Rule 4: floor(used*100/limit); a limit of 0 is 0% unused, else 100%.
# Rule 5: EXHAUSTED from exhausted_at = ceil(limit*block/100), absent when
# the limit is 0 or blocking is off; WARNING from warn_at =
# ceil(limit*warn/100), or from the first use for a limit of 0.
dimension(used, limit, t) := {"used": used, "limit": limit, "percent": percent(used, limit), "level": level(used, t)}

# Rule 4: floor(used*100/limit) for a limit above 0, worked out in whole
# numbers where it can be (a division that leaves a remainder would go
# through floating point, many times slower); a limit of 0 is 0% unused,
# else 100%.
percent(used, limit) := (h - (h % limit)) / limit if {
	limit > 0
	used >= 0
	used == floor(used)
	h := used * 100
} else := floor((used * 100) / limit) if limit > 0

else := 0 if used == 0

else := 100

level(used, t) := "EXHAUSTED" if used >= t.exhausted_at

else := "WARNING" if used >= t.warn_at

else := "OK"

signal := _signal({budget.tokens.level, budget.shell.level, budget.cost.level})

# The worst of a set of levels.
_signal(levels) := "OK" if levels == {"OK"}

else := "EXHAUSTED" if levels.EXHAUSTED

else := "WARNING"

exhausted contains dim if {
	signal == "EXHAUSTED"
	some dim, d in budget
	d.level == "EXHAUSTED"
}

warning contains dim if {
	signal != "OK"
	some dim, d in budget
	d.level == "WARNING"
}

# -- Rules 6 and 7: budget reasons ---------------------------------------------

budget_reasons contains r if {
	some dim in exhausted
	r := _reason("budget_exhausted", sprintf("%s budget of role '%s' is exhausted: %s of %s used", [dim, role_name, _amount(dim, budget[dim].used), _amount(dim, budget[dim].limit)]))
}

# Rule 7: the shell budget admits floor(limit*block/100) calls in all
# (thresholds.shell.admits, absent when blocking is off).
budget_reasons contains r if {
	shell_tool
	usage.shell + 1 > thresholds.shell.admits
	r := _reason("shell_budget", sprintf("shell budget of role '%s' admits %d invocations and %d are used", [role_name, thresholds.shell.admits, usage.shell]))
}

# -- Agent budgets (contract section 8) ------------------------------------------

# An agent's budget across all its sessions, per period: its own, else the
# one of every agent ("*"). input.agent_budget is the agent's usage in the
# current period, which the caller reads from the ledger. A dimension the
# budget does not bound is absent.
agent_budget := b if {
	is_string(input.agent)
	b := data.harness.agents[input.agent].budget
} else := data.harness.agents["*"].budget

_agent_usage_given if not agent_budget

_agent_usage_given if {
	agent_budget
	u := input.agent_budget
	every key in ["tokens", "shell", "cost_micros"] {
		_natural(object.get(u, key, 0))
	}
}

_agent_used := {"tokens": object.get(u, "tokens", 0), "shell": object.get(u, "shell", 0), "cost": object.get(u, "cost_micros", 0)} if {
	u := input.agent_budget
	is_object(u)
} else := {"tokens": 0, "shell": 0, "cost": 0}

_limit_keys := {"tokens": "tokens", "shell": "shell", "cost": "cost_micros"}

# The agent budget's dimensions, as the session's (rules 4 and 5).
agent_dimensions := {dim: dimension(_agent_used[dim], agent_budget.limits[_limit_keys[dim]], t) |
	some dim, t in agent_budget.thresholds
}

agent_signal := "OK" if count(agent_dimensions) == 0

else := _signal({d.level | some d in agent_dimensions})

# What a decision and a status say of the agent's budget: null when none
# applies.
agent_budget_summary := object.union(
	{"agent": input.agent, "period": agent_budget.period, "signal": agent_signal},
	agent_dimensions,
) if agent_budget

else := null

budget_reasons contains r if {
	some dim, d in agent_dimensions
	d.level == "EXHAUSTED"
	r := _reason("agent_budget_exhausted", sprintf("%s budget of agent '%s' for the %s is exhausted: %s of %s used", [dim, input.agent, _period_word(agent_budget.period), _amount(dim, d.used), _amount(dim, d.limit)]))
}

budget_reasons contains r if {
	shell_tool
	t := agent_budget.thresholds.shell
	_agent_used.shell + 1 > t.admits
	r := _reason("agent_shell_budget", sprintf("shell budget of agent '%s' for the %s admits %d invocations and %d are used", [input.agent, _period_word(agent_budget.period), t.admits, _agent_used.shell]))
}

_period_word(p) := "whole time" if p == "total"

else := p

# -- Self-protection -------------------------------------------------------------

# The harness's own files (the user's roles, policies and configuration,
# the ledger and logs, Claude Code's settings that hold the hook, a
# project's .lean-ctx) are out of an agent's reach, and so are the
# operator's commands: defence in depth, since an agent with a shell as
# the same OS user can go around any rule on its arguments (the README's
# threat model says what needs isolation outside the harness).
_protect := object.get(data.harness.config, "protect", {})

_protecting if {
	object.get(_protect, "enabled", false) == true
	not exempt
}

# A tool that changes files, by either of its names, without regard to
# case.
edit_tool if matches(data.harness.config.edit_tools, lower(tool))

edit_tool if {
	upstream_tool != ""
	matches(data.harness.config.edit_tools, lower(upstream_tool))
}

default edit_tool := false

# The path arguments of a call: string values under keys that name paths,
# at any depth.
_path_arguments contains v if {
	walk(_arguments, [p, v])
	is_string(v)
	count(p) > 0
	regex.match(`(?i)(path|paths|file|files|filename|dir|dirs|directory|source|sources|destination|target|dest|src|uri|url)$`, _last_key(p))
}

_last_key(p) := k if {
	k := p[count(p) - 1]
	is_string(k)
} else := k if {
	count(p) > 1
	k := p[count(p) - 2]
	is_string(k)
} else := ""

# The strings of a shell call's arguments: its command, wherever it is.
_command_strings contains v if {
	walk(_arguments, [_, v])
	is_string(v)
}

protect_reasons contains r if {
	_protecting
	edit_tool
	some path in _path_arguments
	_protected_edit(path)
	r := _reason("harness_files", sprintf("tool '%s' may not change %s: it is one of the harness's own files (roles, policies, configuration, the ledger and logs, Claude Code's settings); only the operator changes them", [tool, _quote(path)]))
}

# A path an edit changes is also judged as the file system resolves it
# (input.resolved, which the engine fills in when it decides the call: its
# symbolic links followed, a relative path from the call's working
# directory and the project's), so that a link in the project does not
# take an edit to the harness's files.
protect_reasons contains r if {
	_protecting
	edit_tool
	some path in _path_arguments
	not _protected_edit(path)
	some real in _resolutions(path)
	_protected_edit(real)
	r := _reason("harness_files", sprintf("tool '%s' may not change %s, which is %s as the file system resolves it: one of the harness's own files (roles, policies, configuration, the ledger and logs, Claude Code's settings); only the operator changes them", [tool, _quote(path), _quote(real)]))
}

# A path the engine could not resolve within its bounds (too many path
# arguments or symbolic links, a path too long, a link under /proc) may
# lead anywhere.
protect_reasons contains r if {
	_protecting
	edit_tool
	some path in _path_arguments
	_resolved[path] == null
	r := _reason("harness_files", sprintf("tool '%s' may not change %s: the harness could not resolve it as the file system would (too many path arguments or symbolic links, too long, or through /proc), so it may be one of the harness's own files", [tool, _quote(path)]))
}

_resolved := object.get(input, "resolved", {})

_resolutions(path) := [real |
	some real in _resolved[path]
	is_string(real)
]

protect_reasons contains r if {
	_protecting
	shell_tool
	some cmd in _command_strings
	_mentions_protected_collapsed(cmd)
	r := _reason("harness_files", sprintf("shell command %s touches the harness's own files (roles, policies, configuration, the ledger and logs, Claude Code's settings); only the operator changes them", [_quote(cmd)]))
}

protect_reasons contains r if {
	_protecting
	shell_tool
	some cmd in _command_strings
	some re in object.get(_protect, "commands", [])
	regex.match(re, cmd)
	r := _reason("operator_command", sprintf("shell command %s runs an operator's command of the harness: only the operator sets roles and resets budgets (an agent switches with ctx_session action=role value=NAME)", [_quote(cmd)]))
}

_protected_path(p) if {
	some re in object.get(_protect, "locations", [])
	regex.match(re, p)
}

_protected_path(p) if {
	x := _expand_home(p)
	some dir in object.get(_protect, "paths", [])
	_under(x, dir)
}

# A path an edit changes is protected as it is written, and when it is
# under a protected path as the file system reads it: without a file://
# scheme, empty and . segments, and with each .. segment taking the one
# before it (the home expanded first). An absolute path of more than 256
# segments that holds a .. is not worked out, and refused.
_protected_edit(p) if _protected_path(p)

_protected_edit(p) if {
	x := _clean_path(p)
	some dir in object.get(_protect, "paths", [])
	_under(x, dir)
}

_protected_edit(p) if {
	s := _collapse(_expand_home(trim_prefix(p, "file://")))
	startswith(s, "/")
	regex.match(`(^|/)\.\.(/|$)`, s)
	count(split(s, "/")) > 256
}

# A shell command names a protected path as it is written, and with its
# empty and . segments dropped (rm ~/.local/state//x is rm ~/.local/state/x).
_mentions_protected_collapsed(cmd) if _mentions_protected(cmd)

_mentions_protected_collapsed(cmd) if _mentions_protected(_collapse(cmd))

# s with every run of / and /./ between two names made one /.
_collapse(s) := regex.replace(s, `/(\.?/)+`, "/")

# An absolute path (after the home is expanded and a file:// scheme
# dropped) as the file system reads it, lexically: segment i stays when it
# is a name that no later .. takes, that is when the running count of names
# less ..s never falls, after it, below where it stood with it.
_clean_path(p) := concat("", ["/", concat("/", kept)]) if {
	s := _collapse(_expand_home(trim_prefix(p, "file://")))
	startswith(s, "/")
	segs := split(s, "/")
	count(segs) <= 256
	w := [_segment_weight(seg) | some seg in segs]
	h := [sum(array.slice(w, 0, k)) | some k in numbers.range(0, count(w))]
	kept := [seg |
		some i, seg in segs
		w[i] == 1
		every later in array.slice(h, i + 2, count(h)) {
			later >= h[i + 1]
		}
	]
}

_segment_weight(seg) := 0 if seg in {"", "."}

else := -1 if seg == ".."

else := 1

_mentions_protected(cmd) if _protected_path(cmd)

_mentions_protected(cmd) if {
	some dir in object.get(_protect, "paths", [])
	some form in _path_forms(dir)
	contains(cmd, form)
}

# A command that names a directory above a protected path (in any form
# of it) and holds, as a word of its own, the path below it, a directory
# on the way to it (from the home directory, one of two segments at
# least), or a path under it, reaches it from there: cd ~/.local/state &&
# rm -rf lean-ctx.
_mentions_protected(cmd) if {
	some a in object.get(_protect, "above", [])
	some form in _dir_forms(a.dir)
	contains(cmd, form)
	some w in _words(cmd)
	count(split(w, "/")) >= a.least
	_on_the_way(w, a.rest)
}

_on_the_way(w, rest) if w == rest

_on_the_way(w, rest) if startswith(rest, concat("", [w, "/"]))

_on_the_way(w, rest) if startswith(w, concat("", [rest, "/"]))

# A command's words: what lies between blanks, quotes and the shell's
# operators, without a leading ./ and trailing slashes.
_words(cmd) := {w |
	some raw in regex.split(`[\s'"=;&|()<>]+`, cmd)
	w := trim_right(trim_prefix(raw, "./"), "/")
	w != ""
}

# A directory as a shell command may name it: as a protected path may be
# written, and the home directory itself as ~, $HOME or ${HOME}.
_dir_forms(dir) := _path_forms(dir) | {form |
	trim_right(object.get(_protect, "home", ""), "/") == dir
	dir != ""
	some form in ["~", "$HOME", "${HOME}"]
}

# A protected path as a shell command may write it: as it is, and from the
# home directory with ~, $HOME or ${HOME}.
_path_forms(dir) := {dir} | {concat("", [prefix, substring(dir, count(home), -1)]) |
	home := object.get(_protect, "home", "")
	home != ""
	startswith(dir, concat("", [home, "/"]))
	some prefix in ["~", "$HOME", "${HOME}"]
}

_expand_home(p) := concat("/", [trim_right(object.get(_protect, "home", ""), "/"), substring(p, count(prefix), -1)]) if {
	some prefix in ["~/", "$HOME/", "${HOME}/"]
	startswith(p, prefix)
} else := p

_under(x, dir) if x == dir

_under(x, dir) if startswith(x, concat("", [trim_right(dir, "/"), "/"]))

# A string of the agent's, shortened for a message.
_quote(s) := sprintf("%q", [s]) if count(s) <= 200

else := sprintf("%q", [concat("", [substring(s, 0, 200), "…"])])

# -- Custom policies -----------------------------------------------------------

# Packages harness.custom.<name> add `deny contains msg if {...}` and
# `warn contains msg if {...}`. Their messages join the decision with code
# "policy" and the package's name. They can only add: nothing they define
# is read but these two sets. A deny or warn that is not a set refuses the
# call (fail closed).
_custom_denies contains r if {
	some name
	d := data.harness.custom[name].deny
	is_set(d)
	some msg in d
	r := _policy_reason(name, msg)
}

_custom_denies contains r if {
	some name
	d := data.harness.custom[name].deny
	not is_set(d)
	r := _policy_reason(name, "deny must be a set of messages: write `deny contains msg if { ... }`")
}

_custom_denies contains r if {
	some name
	w := data.harness.custom[name].warn
	not is_set(w)
	r := _policy_reason(name, "warn must be a set of messages: write `warn contains msg if { ... }`")
}

_custom_warnings contains r if {
	some name
	w := data.harness.custom[name].warn
	is_set(w)
	some msg in w
	r := _policy_reason(name, msg)
}

# The custom policies' messages, at most max_messages of each kind (in
# order), each at most max_message_chars long: a policy cannot flood the
# answer or the logs.
max_messages := 20

max_message_chars := 1024

custom_denies := _capped(_custom_denies, "refusals")

custom_warnings := _capped(_custom_warnings, "warnings")

_capped(rs, what) := rs if {
	count(rs) <= max_messages
	what
} else := {r | some i, r in sort([x | some x in rs]); i < max_messages - 1} | {{
	"code": "policy",
	"message": sprintf("… and %d more %s of custom policies", [count(rs) - (max_messages - 1), what]),
	"policy": "harness.custom",
}}

_policy_reason(name, msg) := {"code": "policy", "message": _cut(_text(msg)), "policy": concat(".", ["harness.custom", name])}

_text(msg) := msg if is_string(msg)

else := sprintf("%v", [msg])

_cut(s) := s if count(s) <= max_message_chars

else := concat("", [substring(s, 0, max_message_chars), "… (cut)"])

# -- Reasons, in order of precedence -------------------------------------------

# What refuses the call: deny.
refusals := harness_reasons | custom_denies if {
	valid_input
	role
} else := {_reason("invalid_input", msg) | some msg in invalid} if not valid_input

else := {_reason("unknown_role", sprintf("role '%s' is not defined; known roles: %s", [role_name, concat(", ", sort(object.keys(data.harness.roles)))]))}

# The decision's reasons: the refusals, else what a person must approve
# (deny > ask).
reasons := refusals if count(refusals) > 0

else := ask_reasons

# The harness's own rules; custom policies apply to exempt tools too.
harness_reasons := set() if exempt

else := access_reasons if count(access_reasons) > 0

else := protect_reasons if count(protect_reasons) > 0

else := {_reason("shell_denied", sprintf("shell tool '%s' is denied: role '%s' has shell_policy 'deny'", [tool, role_name]))} if shell_denied

else := budget_reasons

# -- Rule 8: warnings --------------------------------------------------------

warnings contains w if {
	some dim in warning
	w := _warning(sprintf("%s at %d%% of the budget of role '%s' (%s of %s)", [dim, budget[dim].percent, role_name, _amount(dim, budget[dim].used), _amount(dim, budget[dim].limit)]))
}

warnings contains w if {
	some w in custom_warnings
}

# An exempt tool still runs when a budget is exhausted: say so.
warnings contains w if {
	exempt
	some dim in exhausted
	w := _warning(sprintf("%s budget of role '%s' is exhausted (%s of %s): other tools are blocked", [dim, role_name, _amount(dim, budget[dim].used), _amount(dim, budget[dim].limit)]))
}

warnings contains w if {
	some dim, d in agent_dimensions
	d.level == "WARNING"
	w := _agent_warning(sprintf("%s at %d%% of the budget of agent '%s' for the %s (%s of %s)", [dim, d.percent, input.agent, _period_word(agent_budget.period), _amount(dim, d.used), _amount(dim, d.limit)]))
}

warnings contains w if {
	exempt
	some dim, d in agent_dimensions
	d.level == "EXHAUSTED"
	w := _agent_warning(sprintf("%s budget of agent '%s' for the %s is exhausted (%s of %s): other tools are blocked", [dim, input.agent, _period_word(agent_budget.period), _amount(dim, d.used), _amount(dim, d.limit)]))
}

# -- What a role may call: listings --------------------------------------------

# The tools of input.tools that role input.role may call by its tool lists
# (rule 2) and shell policy (rule 3), exempt tools always: what a listing of
# tools (the gateway's tools/list) shows. Budgets and custom policies, which
# may look at arguments, are left to the call itself. An unknown role may
# call nothing.
# A tool is a name, or {name, upstream, upstream_tool} for an upstream's.
visible contains name if {
	some t in input.tools
	[name, up, ut] := _listed(t)
	_callable(role, name, up, ut)
}

_listed(t) := [t, "", ""] if is_string(t)

_listed(t) := [t.name, object.get(t, "upstream", ""), object.get(t, "upstream_tool", "")] if {
	is_object(t)
	is_string(t.name)
}

_callable(_, t, up, _) if _exempt(t, up)

_callable(r, t, up, ut) if {
	not _exempt(t, up)
	not _denies_call(r, t, ut)
	matches(r.allowed, t)
	_shell_allowed(r, t, ut)
}

# -- A session's budget, without a call ----------------------------------------

# The budget of usage input.budget under role input.role, by rules 4 and 5:
# what the status line shows, and what tells that a change of usage (or of
# role) crossed into WARNING or EXHAUSTED. "defined" is false for an unknown
# role, whose limits are all 0.
status := {
	"role": role_name,
	"defined": _defined,
	"signal": signal,
	"budget": budget,
	"agent_budget": agent_budget_summary,
}

_defined if role

default _defined := false

# The levels of several usages, each under its role (input.usages, each
# {role, budget} with every count given, and agent and agent_budget for the
# agent's budget), by rule 5: how the ledger tells, in one evaluation,
# whether a change of usage (or of role) crossed into WARNING or EXHAUSTED.
# An unknown role's levels are null; "agent" holds the levels of the
# dimensions the agent's budget bounds, null when it has none.
levels := [_levels_of(u) | some u in input.usages]

_levels_of(u) := {"tokens": tokens, "shell": shell, "cost": cost, "signal": _signal({tokens, shell, cost}), "agent": _agent_levels(u)} if {
	t := data.harness.roles[u.role].thresholds
	tokens := level(u.budget.tokens, t.tokens)
	shell := level(u.budget.shell, t.shell)
	cost := level(u.budget.cost_micros, t.cost)
} else := null

_agent_levels(u) := {dim: level(used[dim], t) | some dim, t in b.thresholds} if {
	b := agent_budget with input.agent as object.get(u, "agent", null)
	a := object.get(u, "agent_budget", {})
	used := {"tokens": object.get(a, "tokens", 0), "shell": object.get(a, "shell", 0), "cost": object.get(a, "cost_micros", 0)}
} else := null

# -- What a session may still spend ------------------------------------------------

# How much more of each of tokens and cost the session of input.role and
# input.budget (and its agent's, input.agent and input.agent_budget) may
# take before a budget is exhausted (rule 5): the least that the role's
# and the agent's budgets leave, never below 0; null for a dimension no
# budget bounds (a limit of 0, or blocking off). What a result may still
# bring into the agent's context: the gateway charges a result up to it,
# and cuts the rest.
full_allowance := {"tokens": _allow("tokens", usage.tokens), "cost": _allow("cost", usage.cost)}

_allow(dim, used) := min(left) if {
	session := [max([0, at - used]) | at := thresholds[dim].exhausted_at]
	agent := [max([0, at - _agent_used[dim]]) | at := agent_budget.thresholds[dim].exhausted_at]
	left := array.concat(session, agent)
	count(left) > 0
} else := null

# -- Why, for people -------------------------------------------------------------

# What an explanation of a decision shows beside the decision: what kind of
# tool it is, every pattern of the role's lists that matches it, and the
# role's limits and the thresholds derived from them.
explanation := {
	"decision": decision,
	"exempt": exempt,
	"shell_tool": shell_tool,
	"denied_by": [p | some p in role.denied.patterns; _pattern_matches(p, tool)],
	"allowed_by": [p | some p in role.allowed.patterns; _pattern_matches(p, tool)],
	"asked_by": [p | some p in object.get(role, ["ask", "patterns"], []); _pattern_matches(p, tool)],
	"limits": limits,
	"thresholds": thresholds,
}

# One pattern as written: '*' matches any run of characters, every other
# character is itself (glob.match would read ?, [, { and the like).
_pattern_matches(p, t) if p == t

_pattern_matches(p, t) if {
	contains(p, "*")
	glob.match(_glob_escape(p), null, t)
}

_glob_escape(p) := strings.replace_n(
	{
		"\\": "\\\\", "?": "\\?", "[": "\\[", "]": "\\]", "{": "\\{",
		"}": "\\}", "!": "\\!", ",": "\\,", "-": "\\-", "^": "\\^",
	},
	p,
)

# -- The decision ------------------------------------------------------------

# Most restrictive first: deny > ask > warn > allow.
outcome := "allow" if {
	count(reasons) == 0
	count(warnings) == 0
} else := "deny" if count(refusals) > 0

else := "ask" if count(reasons) > 0

else := "warn"

# Whether a call of each outcome may run: an ask waits for a person.
_runs := {"allow": true, "warn": true, "ask": false, "deny": false}

# What the rules above decide, one by one: the specification of decision.
full_decision := {
	"decision": outcome,
	"allowed": _runs[outcome],
	"role": role_name,
	"tool": tool,
	"shell_policy": shell_policy,
	"shell_tool": shell_tool,
	"compress_output": compress_output,
	"reasons": [r | some r in reasons],
	"warnings": [w | some w in warnings],
	"signal": signal,
	"budget": budget,
	"agent_budget": agent_budget_summary,
}

# -- Helpers -----------------------------------------------------------------

_reason(code, message) := {"code": code, "message": message}

_warning(message) := {"code": "budget_warning", "message": message}

_agent_warning(message) := {"code": "agent_budget_warning", "message": message}

# _amount formats a quantity of a dimension: dollars with two decimals
# (rounded down) for cost, the plain number otherwise.
_amount("cost", micros) := sprintf("$%d.%02d", [(micros - (micros % 1000000)) / 1000000, ((micros % 1000000) - (micros % 10000)) / 10000]) if {
	micros >= 0
	micros == floor(micros)
} else := sprintf("$%d.%02d", [floor(micros / 1000000), floor(micros / 10000) % 100])

_amount(dim, n) := sprintf("%d", [n]) if dim != "cost"
