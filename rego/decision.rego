# Agent Harness decision: data.harness.decision, what full_decision
# (harness.rego) decides, with few expressions for the calls agents make
# most.
package harness

# harness.rego states the rules one by one, as the contract numbers them,
# and full_decision is what they decide. OPA pays for every expression it
# evaluates, more for a function call, most for arithmetic that leaves a
# remainder, and the rules one by one take it a few hundred expressions
# for any call. Most calls come as the engine sends them: every field
# present and well formed, a known role, no agent budget, nothing near
# the harness's own files. The rules below decide those, each kind of
# call in one rule that reads the input and the role once: allowed (a
# shell call in a rule of its own), refused by the role's lists, an
# exempt tool, decided by the levels of the budget (warned, refused by
# the budget or the shell policy, or asked for), or one a custom policy
# speaks of; and, less often, in _rarer_decision: an exempt tool past a
# threshold, a role that is not defined, usage that is not whole numbers
# >= 0. Each rule is a special case of the rules one by one; any other
# call is decided by them.
# TestQuickAgreesWithTheRules holds decision equal to full_decision over a
# grid of calls, FuzzQuickAgreesWithTheRules over arbitrary ones. Each rule
# reads the call itself, in the order that fails a call of another kind
# soonest: one helper rule that read it for all of them cost more than
# the repetition (its value built, cached and taken apart). Two checks are
# shared, each a rule of no value that the plan works out once:
# _budget_quiet comes first in every rule but that of the levels, so a
# call past a threshold (a warning, a refusal by the budget) fails them
# all at once (13-17% fewer statements for those calls; an allowed call
# pays about 25 more, the rule's call and its own reads); _call_plain
# (the call well formed, no custom policy speaking of it) comes second in
# the first four, so a call a custom policy speaks of fails each at once,
# not after its lists (25% fewer statements for those calls; an allowed
# call pays 13 more, a refusal by the lists 9). The role and the
# configuration are rules of no arguments too (_role, _config), read by
# each rule for a statement or two where a read of the data took 6-9.
decision := {
	"decision": "allow",
	"allowed": true,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": false,
	"compress_output": false,
	"reasons": [],
	"warnings": [],
	"signal": "OK",
	"budget": {
		"tokens": {"used": tokens, "limit": r.limits.tokens, "percent": ((tokens * 100) - ((tokens * 100) % th.tokens.percent_of)) / th.tokens.percent_of, "level": "OK"},
		"shell": {"used": shell, "limit": r.limits.shell, "percent": ((shell * 100) - ((shell * 100) % th.shell.percent_of)) / th.shell.percent_of, "level": "OK"},
		"cost": {"used": cost, "limit": r.limits.cost_micros, "percent": ((cost * 100) - ((cost * 100) % th.cost.percent_of)) / th.cost.percent_of, "level": "OK"},
	},
	"agent_budget": null,
} if {
	# Allowed, a tool that is neither exempt nor a shell tool: the role's
	# lists allow it and ask for no approval (rule 2), every dimension is
	# below its thresholds (rule 5), and nothing else speaks.
	_budget_quiet
	_call_plain
	r := _role
	t := input.tool
	ut := input.upstream_tool
	c := _config
	not object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
	not regex.match(r.denied.regex, t)
	not regex.match(r.denied.regex, ut)
	regex.match(r.allowed.regex, t)
	not regex.match(r.ask.regex, t)
	not regex.match(r.ask.regex, ut)
	th := r.thresholds
	b := input.budget
	tokens := b.tokens
	shell := b.shell
	cost := b.cost_micros
	not object.get(c.exempt_by_origin, [input.upstream, t], false)
	_protect_quiet(false, t, ut)
} else := {
	"decision": "allow",
	"allowed": true,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": true,
	"compress_output": r.shell_policy == "compress",
	"reasons": [],
	"warnings": [],
	"signal": "OK",
	"budget": _clear_budget(tokens, shell, cost, r),
	"agent_budget": null,
} if {
	# Allowed, a shell tool: as above, under a shell policy that allows it
	# (rule 3) and within the shell budget (rule 7).
	_budget_quiet
	_call_plain
	r := _role
	t := input.tool
	ut := input.upstream_tool
	c := _config
	object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
	r.shell_policy != "deny"
	not regex.match(r.denied.regex, t)
	not regex.match(r.denied.regex, ut)
	regex.match(r.allowed.regex, t)
	not regex.match(r.ask.regex, t)
	not regex.match(r.ask.regex, ut)
	th := r.thresholds
	b := input.budget
	tokens := b.tokens
	shell := b.shell
	shell < object.get(th.shell, "admits", shell + 1)
	cost := b.cost_micros
	not object.get(c.exempt_by_origin, [input.upstream, t], false)
	_protect_quiet(true, t, ut)
} else := {
	"decision": "deny",
	"allowed": false,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": [_reason(code, _list_message(code, t))],
	"warnings": [],
	"signal": "OK",
	"budget": _clear_budget(tokens, shell, cost, r),
	"agent_budget": null,
} if {
	# Refused by the role's lists (rule 2, before every other reason of
	# the harness's own), every dimension below its thresholds, so no
	# warning.
	_budget_quiet
	_call_plain
	r := _role
	t := input.tool
	ut := input.upstream_tool
	code := _list_refusal(r, t, ut)
	b := input.budget
	tokens := b.tokens
	shell := b.shell
	cost := b.cost_micros
	c := _config
	not object.get(c.exempt_by_origin, [input.upstream, t], false)
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
} else := {
	"decision": "allow",
	"allowed": true,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": [],
	"warnings": [],
	"signal": "OK",
	"budget": _clear_budget(tokens, shell, cost, r),
	"agent_budget": null,
} if {
	# An exempt tool (rule 1), every dimension below its thresholds.
	_budget_quiet
	_call_plain
	t := input.tool
	c := _config
	object.get(c.exempt_by_origin, [input.upstream, t], false)
	r := _role
	b := input.budget
	tokens := b.tokens
	shell := b.shell
	cost := b.cost_micros
	ut := input.upstream_tool
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
} else := {
	"decision": verdict[0],
	"allowed": verdict[0] == "warn",
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": verdict[1],
	"warnings": _warnings_of(signal, budget),
	"signal": signal,
	"budget": budget,
	"agent_budget": null,
} if {
	# Decided by the levels of the budget: refused by the role's lists
	# (rule 2, before every other reason of the harness's own), the shell
	# policy (rule 3) or the budget (rules 6 and 7); else asked for; else
	# warned of each dimension at its warning (rule 8).
	r := _role
	_plain
	t := input.tool
	is_string(t)
	ut := input.upstream_tool
	is_string(ut)
	t != ""
	up := input.upstream
	is_string(up)
	c := _config
	not object.get(c.exempt_by_origin, [up, t], false)
	is_object(input.arguments)
	b := input.budget
	tokens := b.tokens
	is_number(tokens)
	tokens >= 0
	tokens == floor(tokens)
	shell := b.shell
	is_number(shell)
	shell >= 0
	shell == floor(shell)
	cost := b.cost_micros
	is_number(cost)
	cost >= 0
	cost == floor(cost)
	listed := _lists_say(r, t, ut)
	th := r.thresholds
	l := r.limits
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
	_protect_quiet_for(listed, st, t, ut)

	dt := _dimension(tokens, l.tokens, th.tokens)
	ds := _dimension(shell, l.shell, th.shell)
	dc := _dimension(cost, l.cost_micros, th.cost)
	budget := {"tokens": dt, "shell": ds, "cost": dc}

	signal := _worst[[dc.level, ds.level, dt.level]]
	verdict := _verdict(listed, r, t, st, shell, budget, signal)
} else := {
	"decision": outcome,
	"allowed": outcome == "warn",
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": [x | some x in denies],
	"warnings": [x | some x in warnings],
	"signal": "OK",
	"budget": _clear_budget(tokens, shell, cost, r),
	"agent_budget": null,
} if {
	# A call the rules above would allow, of which a custom policy says
	# something: refused by its denies, else warned of its warnings.
	_budget_quiet
	r := _role
	t := input.tool
	is_string(t)
	ut := input.upstream_tool
	is_string(ut)
	_lists_say(r, t, ut) == "allow"
	t != ""
	up := input.upstream
	is_string(up)
	c := _config
	not object.get(c.exempt_by_origin, [up, t], false)
	is_object(input.arguments)
	b := input.budget
	tokens := b.tokens
	shell := b.shell
	cost := b.cost_micros
	_data_plain
	not data.harness.agents[input.agent]
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, ut, false))
	_shell_fine(r, st, shell)
	_protect_quiet(st, t, ut)
	denies := custom_denies
	warnings := custom_warnings
	outcome := _custom_outcome(denies, warnings)
} else := _rarer_decision

# The calls the rules above do not decide, of which a few are still
# common enough to decide in a rule of their own: an exempt tool past a
# threshold, a role that is not defined, usage not as the engine sends
# it. Any other call is decided by the rules one by one (full_decision).
# A rule of its own, not more else branches of decision: each branch
# costs every call a statement, the allowed ones too.
_rarer_decision := {
	"decision": _exempt_outcome[signal],
	"allowed": true,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": [],
	"warnings": [w |
		some dim in ["cost", "shell", "tokens"]
		w := _exempt_warning(dim, budget[dim])
	],
	"signal": signal,
	"budget": budget,
	"agent_budget": null,
} if {
	# An exempt tool (rule 1) past a threshold: allowed, warned of each
	# dimension at its warning (rule 8) and of each exhausted one.
	_call_plain
	r := _role
	t := input.tool
	c := _config
	object.get(c.exempt_by_origin, [input.upstream, t], false)
	b := input.budget
	tokens := b.tokens
	is_number(tokens)
	tokens >= 0
	tokens == floor(tokens)
	shell := b.shell
	is_number(shell)
	shell >= 0
	shell == floor(shell)
	cost := b.cost_micros
	is_number(cost)
	cost >= 0
	cost == floor(cost)
	th := r.thresholds
	l := r.limits
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, input.upstream_tool, false))
	dt := _dimension(tokens, l.tokens, th.tokens)
	ds := _dimension(shell, l.shell, th.shell)
	dc := _dimension(cost, l.cost_micros, th.cost)
	budget := {"tokens": dt, "shell": ds, "cost": dc}
	signal := _worst[[dc.level, ds.level, dt.level]]
} else := {
	"decision": "deny",
	"allowed": false,
	"role": input.role,
	"tool": t,
	"shell_policy": "",
	"shell_tool": object.get(c.shell_tools, t, object.get(c.shell_tools, input.upstream_tool, false)),
	"compress_output": false,
	"reasons": [_reason("unknown_role", sprintf("role '%s' is not defined; known roles: %s", [input.role, _known_roles]))],
	"warnings": _warnings_of(_worst[[dc.level, ds.level, dt.level]], budget),
	"signal": _worst[[dc.level, ds.level, dt.level]],
	"budget": budget,
	"agent_budget": null,
} if {
	# A role that is not defined, the call well formed: refused for that
	# alone, its budget of limits of 0 (the defaults of limits and
	# thresholds).
	_call_plain
	not _role
	is_string(input.role)
	input.role != ""
	t := input.tool
	c := _config
	b := input.budget
	tokens := b.tokens
	is_number(tokens)
	tokens >= 0
	tokens == floor(tokens)
	shell := b.shell
	is_number(shell)
	shell >= 0
	shell == floor(shell)
	cost := b.cost_micros
	is_number(cost)
	cost >= 0
	cost == floor(cost)
	th := thresholds
	l := limits
	dt := _dimension(tokens, l.tokens, th.tokens)
	ds := _dimension(shell, l.shell, th.shell)
	dc := _dimension(cost, l.cost_micros, th.cost)
	budget := {"tokens": dt, "shell": ds, "cost": dc}
} else := {
	"decision": "deny",
	"allowed": false,
	"role": input.role,
	"tool": t,
	"shell_policy": r.shell_policy,
	"shell_tool": st,
	"compress_output": _compresses(r, st),
	"reasons": [_reason("invalid_input", msg) | some msg in invalid],
	"warnings": _warnings_of(_worst[[dc.level, ds.level, dt.level]], budget),
	"signal": _worst[[dc.level, ds.level, dt.level]],
	"budget": budget,
	"agent_budget": null,
} if {
	# A known role's call, well formed but for its usage (not whole
	# numbers >= 0): refused for what is wrong with it (invalid), its
	# budget that of no usage.
	_call_plain
	r := _role
	input.role != ""
	not _checked_usage
	t := input.tool
	c := _config
	not object.get(c.exempt_by_origin, [input.upstream, t], false)
	st := object.get(c.shell_tools, t, object.get(c.shell_tools, input.upstream_tool, false))
	th := r.thresholds
	l := r.limits
	dt := _dimension(0, l.tokens, th.tokens)
	ds := _dimension(0, l.shell, th.shell)
	dc := _dimension(0, l.cost_micros, th.cost)
	budget := {"tokens": dt, "shell": ds, "cost": dc}
} else := full_decision

# The known roles, as a refusal of an unknown one names them: a rule of
# the data alone, which the plan works out once for all evaluations.
_known_roles := concat(", ", sort(object.keys(data.harness.roles)))

# The outcome of an exempt tool's call, by its signal: warned of every
# dimension past a threshold.
_exempt_outcome := {"OK": "allow", "WARNING": "warn", "EXHAUSTED": "warn"}

# The warning of a dimension d of an exempt tool's call (rule 8): at its
# warning, or exhausted (the call runs, other tools are blocked);
# nothing when it is OK.
_exempt_warning(dim, d) := _warning(sprintf("%s at %d%% of the budget of role '%s' (%s of %s)", [dim, d.percent, input.role, _amount_of(dim, d.used), _amount_of(dim, d.limit)])) if {
	d.level == "WARNING"
} else := _warning(sprintf("%s budget of role '%s' is exhausted (%s of %s): other tools are blocked", [dim, input.role, _amount_of(dim, d.used), _amount_of(dim, d.limit)])) if {
	d.level == "EXHAUSTED"
}

# The warnings of a budget of signal signal, of a call that is not of an
# exempt tool (rule 8): one for each dimension at its warning, in the
# order of full_decision (by their messages, which start with the
# dimension); none, without a look at each, when every level is OK.
_warnings_of(signal, budget) := [] if {
	signal == "OK"
} else := [w |
	some dim in ["cost", "shell", "tokens"]
	d := budget[dim]
	d.level == "WARNING"
	w := _warning(sprintf("%s at %d%% of the budget of role '%s' (%s of %s)", [dim, d.percent, input.role, _amount_of(dim, d.used), _amount_of(dim, d.limit)]))
]

# _amount in one else chain: the plain number for tokens and shell,
# dollars for cost. A function of several bodies has them all evaluated,
# and the messages of the rules above mostly name tokens and shell.
_amount_of(dim, n) := sprintf("%d", [n]) if dim != "cost"

else := _amount(dim, n)

# The call's names and arguments are well formed (a tool's name, its
# upstream's and the upstream's own name for it strings, the first not
# empty; the arguments an object), and nothing beyond the role's lists and
# budget speaks of it (_plain). A rule, which the plan works out once for
# all the rules above: a call a custom policy speaks of fails each of
# them at once, where it failed each at its end, after its own reads.
_call_plain if {
	t := input.tool
	is_string(t)
	t != ""
	is_string(input.upstream_tool)
	is_string(input.upstream)
	is_object(input.arguments)
	_plain
}

# The call's role, read once for all the rules above: a rule, which the
# plan works out once an evaluation (a function would be called by each).
_role := data.harness.roles[input.role]

# The configuration, a rule of the data alone, which the plan works out
# once for all evaluations.
_config := data.harness.config

# Nothing beyond the role's lists and budget speaks of the call: the data
# is of the version this policy reads, no agent's budget applies, and no
# custom policy says anything (a deny or warn that is not the empty set).
_plain if {
	_data_plain
	not data.harness.agents[input.agent]
	not _custom_speaks
}

# What _plain asks of the data alone: a rule of no input, which the plan
# works out once for all evaluations.
_data_plain if {
	data.harness.schema_version == supported_schema
	not data.harness.agents["*"]
}

# Every dimension of the call's usage is below its warning threshold, and
# as the engine sends it (a whole number, at least 0): what the rules of
# allowed calls, refusals by the lists, exempt tools and custom policies
# above all need. A rule, which the plan works out once for all of them:
# a call whose usage is past a threshold (a warning, a refusal by the
# budget) fails each of them at once, and the rule of the levels decides
# it.
_budget_quiet if {
	th := _role.thresholds
	b := input.budget
	tokens := b.tokens
	tokens >= 0
	tokens < th.tokens.ok_below
	tokens == floor(tokens)
	shell := b.shell
	shell >= 0
	shell < th.shell.ok_below
	shell == floor(shell)
	cost := b.cost_micros
	cost >= 0
	cost < th.cost.ok_below
	cost == floor(cost)
}

_custom_speaks if {
	some name
	data.harness.custom[name].deny != set()
}

_custom_speaks if {
	some name
	data.harness.custom[name].warn != set()
}

# Why the role's lists refuse a call, if they do (rule 2): a denied
# pattern matches either of its names, or no allowed pattern matches its
# name. An upstream name of "" matches only a list of '*' alone, which
# matches the tool's own name first.
_list_refusal(r, t, ut) := "tool_denied" if regex.match(r.denied.regex, t)

else := "tool_denied" if regex.match(r.denied.regex, ut)

else := "tool_not_allowed" if not regex.match(r.allowed.regex, t)

_list_message("tool_denied", t) := sprintf("tool '%s' is denied for role '%s'", [t, input.role])

_list_message("tool_not_allowed", t) := sprintf("tool '%s' is not allowed for role '%s': no allowed pattern matches it", [t, input.role])

# What the role's lists say of a call: a refusal (as _list_refusal), else
# "ask" when an ask pattern matches either of its names, else "allow".
_lists_say(r, t, ut) := "tool_denied" if regex.match(r.denied.regex, t)

else := "tool_denied" if regex.match(r.denied.regex, ut)

else := "tool_not_allowed" if not regex.match(r.allowed.regex, t)

else := "ask" if regex.match(r.ask.regex, t)

else := "ask" if regex.match(r.ask.regex, ut)

else := "allow"

# The self-protection rules come after the lists: a call the lists refuse
# is refused for that alone. An else chain: the bodies of a function are
# all evaluated, and a call the lists admit needs only the first.
_protect_quiet_for(listed, st, t, ut) if {
	listed in {"allow", "ask"}
	_protect_quiet(st, t, ut)
} else if listed in {"tool_denied", "tool_not_allowed"}

_custom_outcome(denies, warnings) := "deny" if count(denies) > 0

else := "warn" if count(warnings) > 0

else := "allow"

# Not a shell call, or one the shell policy allows and the shell budget
# admits (rules 3 and 7).
_shell_fine(_, false, _) := true

_shell_fine(r, true, shell) if {
	r.shell_policy != "deny"
	shell < object.get(r.thresholds.shell, "admits", shell + 1)
}

# A dimension of the budget (rules 4 and 5) of usage known to be a whole
# number >= 0, its level and percent worked out in one call: below its
# thresholds, usage is a percentage of percent_of (0 of a limit of 0);
# past them, of a limit above 0 (else, as the rules one by one).
_dimension(used, limit, t) := {"used": used, "limit": limit, "percent": (h - (h % p)) / p, "level": "OK"} if {
	used < t.ok_below
	h := used * 100
	p := t.percent_of
} else := {"used": used, "limit": limit, "percent": (h - (h % limit)) / limit, "level": "EXHAUSTED"} if {
	used >= t.exhausted_at
	limit > 0
	h := used * 100
} else := {"used": used, "limit": limit, "percent": (h - (h % limit)) / limit, "level": "WARNING"} if {
	limit > 0
	h := used * 100
} else := {"used": used, "limit": limit, "percent": _whole_percent(used, limit), "level": level(used, t)}

# Rule 4 (percent) of usage known to be a whole number >= 0.
_whole_percent(used, limit) := (h - (h % limit)) / limit if {
	limit > 0
	h := used * 100
} else := 0 if used == 0

else := 100

# The worst of the levels [cost, shell, tokens] (as _signal), for each
# three of them: a rule of the data alone (it calls no function), which
# the plan works out once for all evaluations.
_worst := {[c, s, t]: _levels_in_order[max([i, j, k])] |
	some i, c in _levels_in_order
	some j, s in _levels_in_order
	some k, t in _levels_in_order
}

_levels_in_order := ["OK", "WARNING", "EXHAUSTED"]

_compresses(r, true) := r.shell_policy == "compress"

_compresses(_, false) := false

# The budget of usage below every threshold: every level OK, and usage
# below a warning is 0 of a limit of 0 (rule 4, in whole numbers: see
# percent).
_clear_budget(tokens, shell, cost, r) := {
	"tokens": {"used": tokens, "limit": r.limits.tokens, "percent": ((tokens * 100) - ((tokens * 100) % th.tokens.percent_of)) / th.tokens.percent_of, "level": "OK"},
	"shell": {"used": shell, "limit": r.limits.shell, "percent": ((shell * 100) - ((shell * 100) % th.shell.percent_of)) / th.shell.percent_of, "level": "OK"},
	"cost": {"used": cost, "limit": r.limits.cost_micros, "percent": ((cost * 100) - ((cost * 100) % th.cost.percent_of)) / th.cost.percent_of, "level": "OK"},
} if {
	th := r.thresholds
}

# The outcome and reasons of a call decided by the levels of its budget
# (signal: the worst of them), deny > ask > warn: the lists' refusal
# alone when they refuse it (rule 2, before every other reason of the
# harness's own); else shell_denied alone (rule 3 comes before the
# budget); else budget_exhausted for each exhausted dimension (rule 6)
# and shell_budget for a shell call past the shell budget (rule 7), in
# the order full_decision gives them; else a person's approval for a call
# the lists ask for; else a warning, or nothing. One function of one else
# chain: it stops at the first that holds.
_verdict(listed, r, t, st, shell, budget, signal) := ["deny", [_reason(listed, _list_message(listed, t))]] if {
	listed in {"tool_denied", "tool_not_allowed"}
} else := ["deny", [_reason("shell_denied", sprintf("shell tool '%s' is denied: role '%s' has shell_policy 'deny'", [t, input.role]))]] if {
	st == true
	r.shell_policy == "deny"
} else := ["deny", array.concat(_exhausted(budget), _shell_refusals(r, st, shell))] if {
	signal == "EXHAUSTED"
} else := ["deny", _shell_refusals(r, st, shell)] if {
	not _shell_fine(r, st, shell)
} else := ["ask", [_reason("approval_required", sprintf("tool '%s' needs a person's approval for role '%s'", [t, input.role]))]] if {
	listed == "ask"
} else := _warned if {
	signal == "WARNING"
} else := _allowed

# The verdicts of no reason: rules of no input, whose values the plan
# keeps for all evaluations.
_warned := ["warn", []]

_allowed := ["allow", []]

# The refusals of the exhausted dimensions (rule 6) and of the shell
# budget (rule 7), each a list in the order full_decision gives them: by
# code (budget_exhausted first), then by message, which starts with the
# dimension (a budget's dimensions are in that order). Lists, not sets:
# nothing to sort or join.
_exhausted(budget) := [x |
	some dim, d in budget
	d.level == "EXHAUSTED"
	x := _reason("budget_exhausted", sprintf("%s budget of role '%s' is exhausted: %s of %s used", [dim, input.role, _amount_of(dim, d.used), _amount_of(dim, d.limit)]))
]

_shell_refusals(r, st, shell) := [_reason("shell_budget", sprintf("shell budget of role '%s' admits %d invocations and %d are used", [input.role, admits, shell]))] if {
	st == true
	admits := r.thresholds.shell.admits
	shell + 1 > admits
} else := []

# Whether the self-protection rules have nothing to look at in a call of a
# tool (by its two names; st: whether it is a shell tool): they are off;
# or the tool neither runs shell commands nor edits files; or no string of
# its arguments holds a match of the protect data's suspect expression,
# which every string they refuse does (TestSuspectCoversProtection). An
# else chain tries them in that order and stops at the first that holds,
# so the arguments of a tool that edits nothing are not walked (the bodies
# of a function are all evaluated).
_protect_quiet(st, t, ut) if {
	_protect_off
} else if {
	st == false
	not regex.match(_edit_tools, lower(t))
	not regex.match(_edit_tools, lower(ut))
} else if not _protect_suspects

# The parts of the protect and edit tools data _protect_quiet reads:
# rules of no input, which the plan works out once for all evaluations.
_protect_off if data.harness.config.protect.enabled == false

_edit_tools := data.harness.config.edit_tools.regex

_protect_suspects if {
	walk(input.arguments, [_, v])
	is_string(v)
	regex.match(data.harness.config.protect.suspect.regex, v)
}

# So does a path argument as the file system resolves it, and one that
# could not be resolved (input.resolved).
_protect_suspects if {
	some real in input.resolved
	_suspect_resolution(real)
}

_suspect_resolution(real) if not is_array(real)

_suspect_resolution(real) if {
	some v in real
	regex.match(data.harness.config.protect.suspect.regex, v)
}

# A suspect expression made of other data than the document holds (one
# edited by hand) is no guide: everything is suspect.
_protect_suspects if _protect_suspect_stale

# A rule of the data alone, which the plan works out once for all the
# evaluations of a policy, not on every call of a tool that edits files.
_protect_suspect_stale if {
	p := data.harness.config.protect
	p.suspect.of != {"paths": p.paths, "locations": p.locations, "commands": p.commands, "home": p.home, "above": object.get(p, "above", [])}
}

# -- What a session may still spend --------------------------------------------

# allowance (harness.rego states it as full_allowance) for a known role,
# usage as the engine sends it and no agent's budget: what each
# dimension's exhaustion threshold leaves, with one read of the role.
allowance := {"tokens": _left(tokens, th.tokens), "cost": _left(cost, th.cost)} if {
	r := _role
	b := input.budget
	tokens := b.tokens
	is_number(tokens)
	tokens >= 0
	tokens == floor(tokens)
	shell := b.shell
	is_number(shell)
	shell >= 0
	shell == floor(shell)
	cost := b.cost_micros
	is_number(cost)
	cost >= 0
	cost == floor(cost)
	not data.harness.agents[input.agent]
	not data.harness.agents["*"]
	th := r.thresholds
} else := full_allowance

# What usage leaves of a dimension before its exhaustion threshold t, at
# least 0; null when it has none.
_left(used, t) := n if {
	n := t.exhausted_at - used
	n > 0
} else := 0 if {
	t.exhausted_at
} else := null
