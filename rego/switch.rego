# Agent Harness role switch.
#
# Decides whether a session may change its active role. Entry point:
# data.harness.switch, for input {from, to, by ("agent" or "operator"),
# session, agent, max_role (optional)}; data.harness.switch_targets, for the
# same input without "to", says of every role whether that switch may reach
# it (what ctx_session and `harness role` offer). An agent may not switch
# itself into a privileged role (admin, ops, any role marked privileged),
# nor into a role beyond its ceiling: its max_role, or without one the
# least upper bound of the non-privileged built-ins (every tool, the
# highest of their limits and block percentages, shell policy track;
# data.harness.ceiling). "Beyond" is the compiler's covers relation: a role
# is within a ceiling when the ceiling allows every tool it allows, denies
# what it would deny, has no stricter shell policy, and no limit or block
# percentage of the role is higher (a limit of 0 context tokens or $0,
# never exhausted, is higher than any other). So no role file of a repository can
# define a way up. The operator may switch to any role. Custom policies add
# `switch_deny contains msg if {...}` rules, which bind everyone (they may
# look at input.by). Usage is never part of a switch: the new role's
# limits apply to what the session has used.
package harness

switch := {
	"allowed": count(switch_reasons) == 0,
	"from": object.get(input, "from", ""),
	"to": object.get(input, "to", ""),
	"by": object.get(input, "by", ""),
	"reasons": [r | some r in switch_reasons],
}

# Every role, and whether the switch of input (with each role as input.to)
# is allowed.
switch_targets := {to: allowed |
	some to, _ in data.harness.roles
	allowed := switch.allowed with input.to as to
}

by_agent if input.by != "operator"

target := data.harness.roles[input.to]

switch_reasons contains _switch_reason("unknown_role", msg) if {
	not target
	msg := sprintf("role '%v' is not defined; known roles: %s", [input.to, concat(", ", sort(object.keys(data.harness.roles)))])
}

switch_reasons contains _switch_reason("invalid_input", "input.by must be \"agent\" or \"operator\"") if {
	not input.by in {"agent", "operator"}
}

switch_reasons contains _switch_reason("privileged", msg) if {
	by_agent
	target.privileged
	msg := sprintf("role '%s' is privileged: an agent may not switch itself into it (an operator can: harness role set %s --session S)", [input.to, input.to])
}

# The agent's ceiling: the roles within its max_role, or within the
# default ceiling when it has none. An unknown max_role covers nothing,
# nor does one the project defines: the repository's files are the
# agent's, and a ceiling they define would be the agent's own.
_max_role := m if {
	m := object.get(input, "max_role", "")
	is_string(m)
	m != ""
}

_max_role_of_project if data.harness.roles[_max_role].source == "project"

_ceiling_covers := data.harness.roles[_max_role].covers if {
	_max_role
	not _max_role_of_project
}

else := data.harness.ceiling.covers if not _max_role

switch_reasons contains _switch_reason("ceiling", msg) if {
	by_agent
	target
	not target.privileged
	not _ceiling_covers[input.to]
	msg := _beyond_message
}

_beyond_message := sprintf("role '%v' is beyond the ceiling of this agent: its max_role '%v' is a role this project defines, which covers no role (a repository may not set its agent's ceiling; name a built-in or user role as max_role)", [input.to, _max_role]) if _max_role_of_project

else := sprintf("role '%v' is beyond '%v', the most privileged role this agent may hold (its max_role)%s", [input.to, _max_role, _why_beyond(data.harness.roles[_max_role].limits)]) if _max_role

else := sprintf("role '%v' is beyond the ceiling of agents without a max_role, the built-in coder, debugger and reviewer together (every tool, at most %d context tokens, %d shell calls and %s, blocking from %d%%)%s: %s", [
	input.to, c.tokens, c.shell, _amount("cost", c.cost_micros), c.block_percent, _why_beyond(c), _who_gives,
]) if {
	c := data.harness.ceiling.limits
}

# Who may give a role beyond the ceiling: the operator, unless the project
# defines it: a project's role is in effect only within the agent's
# ceiling, whoever chose it, since the repository can rewrite it (the
# governor refuses the calls of a session in one).
_who_gives := "no agent holds a role of the project's beyond its ceiling, whoever sets it (an operator names a user's role instead, or raises the agent's max_role)" if {
	target.source == "project"
} else := sprintf("only an operator can give it (harness role set %v --session S)", [input.to])

# What makes the target go beyond a ceiling's limits, if they do.
_why_beyond(c) := concat("", [": ", concat("; ", reasons)]) if {
	l := target.limits
	bounded := [r |
		some [key, dim, mine, theirs] in [
			["max_context_tokens", "tokens", l.tokens, c.tokens],
			["max_shell_invocations", "shell", l.shell, c.shell],
			["max_cost_usd", "cost", l.cost_micros, c.cost_micros],
			["block_at_percent", "percent", l.block_percent, c.block_percent],
		]
		mine > theirs
		_bounds(dim, theirs)
		r := sprintf("its %s %s is above %s", [key, _amount(dim, mine), _amount(dim, theirs)])
	]

	# A limit of 0 context tokens or $0 is never exhausted (rule 5): no
	# bound at all, beyond any ceiling's other than 0.
	unbounded := [r |
		some [key, mine, theirs] in [
			["max_context_tokens", l.tokens, c.tokens],
			["max_cost_usd", l.cost_micros, c.cost_micros],
		]
		mine == 0
		theirs != 0
		r := sprintf("its %s 0 is no bound at all (a limit of 0 is never exhausted)", [key])
	]
	reasons := array.concat(unbounded, bounded)
	count(reasons) > 0
} else := ": its tools or shell policy go beyond it"

# Whether a ceiling's limit of dim bounds anything: a limit of 0 context
# tokens or $0 does not (rule 5).
_bounds(dim, _) if not dim in {"tokens", "cost"}

_bounds(_, limit) if limit != 0

switch_reasons contains _switch_reason(concat(".", ["harness.custom", name]), _text(msg)) if {
	some name
	some msg in data.harness.custom[name].switch_deny
}

_switch_reason(rule, message) := {"code": "switch_denied", "rule": rule, "message": message}
