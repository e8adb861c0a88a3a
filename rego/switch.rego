# Agent Harness role switch.
#
# Decides whether a session may change its active role. Entry point:
# data.harness.switch, for input {from, to, by ("agent" or "operator"),
# session, agent, max_role (optional)}; data.harness.switch_targets, for the
# same input without "to", says of every role whether that switch may reach
# it (what ctx_session and `harness role` offer). An agent may not switch itself into
# a privileged role (admin, ops, any role marked privileged), nor into a role
# of a user or project file that allows every tool and denies none, whatever
# its name (the built-in coder and debugger are such roles by design), nor,
# when it has a most privileged role (max_role), into a role beyond it. The
# operator may. Custom policies add `switch_deny contains msg if {...}`
# rules, which bind everyone (they may look at input.by). Usage is never
# part of a switch: the new role's limits apply to what the session has
# used.
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

switch_reasons contains _switch_reason("privileged_role", msg) if {
	by_agent
	target.privileged
	msg := sprintf("role '%s' is privileged: an agent may not switch itself into it (an operator can: harness role set %s --session S)", [input.to, input.to])
}

switch_reasons contains _switch_reason("unrestricted_role", msg) if {
	by_agent
	not target.privileged
	target.unrestricted
	target.source != "built-in"
	msg := sprintf("role '%s' allows every tool and denies none: an agent may not switch itself into it (an operator can)", [input.to])
}

# The compiler lists under each role the roles within it (covers): no tool,
# looser shell policy, higher limit or privilege beyond it. An unknown
# max_role covers nothing.
switch_reasons contains _switch_reason("max_role", msg) if {
	by_agent
	ceiling := object.get(input, "max_role", "")
	ceiling != ""
	not data.harness.roles[ceiling].covers[input.to]
	msg := sprintf("role '%v' is beyond '%v', the most privileged role this agent may hold", [input.to, ceiling])
}

switch_reasons contains _switch_reason(concat(".", ["harness.custom", name]), _text(msg)) if {
	some name
	some msg in data.harness.custom[name].switch_deny
}

_switch_reason(rule, message) := {"code": "switch_denied", "rule": rule, "message": message}
