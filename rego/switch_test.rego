# Tests of the role switch rules (data.harness.switch, switch_targets), with
# the fixture's roles (see harness_test.rego).
package harness.tests

switching(from, to, by) := capped(from, to, by, "")

capped(from, to, by, max_role) := switch_with(
	{"from": from, "to": to, "by": by, "session": "s-1", "agent": "test", "max_role": max_role},
	{},
)

# switch_with decides a switch with the fixture's roles and the custom
# policies custom.
switch_with(request, custom) := s if {
	s := data.harness.switch with input as request
		with data.harness.roles as fixture.roles
		with data.harness.ceiling as fixture.ceiling
		with data.harness.agents as fixture.agents
		with data.harness.custom as custom
}

rules(s) := [r.rule | some r in s.reasons]

test_agent_may_switch_between_ordinary_roles if {
	every pair in [["coder", "reviewer"], ["reviewer", "coder"], ["coder", "debugger"]] {
		switching(pair[0], pair[1], "agent").allowed
	}
}

test_agent_may_not_enter_privileged_roles if {
	every to in ["admin", "ops"] {
		s := switching("coder", to, "agent")
		not s.allowed
		rules(s) == ["privileged"]
		startswith(s.reasons[0].message, sprintf("role '%s' is privileged: an agent may not switch itself into it", [to]))
	}
}

# Without a max_role, an agent's ceiling is the built-in coder, debugger and
# reviewer together: every tool, their highest limits, blocking from 100%.
test_the_default_ceiling if {
	fixture.ceiling.limits.tokens == 200000
	fixture.ceiling.limits.shell == 200
	fixture.ceiling.limits.cost_micros == 5000000
	fixture.ceiling.limits.block_percent == 100
	every to in ["coder", "debugger", "reviewer", "anything-goes", "ctx-only", "no-shell", "zero-shell", "block-90"] {
		switching("reviewer", to, "agent").allowed
	}
}

# A role of a user's or a project's file is no way up, whatever it denies:
# one deny that matches nothing does not make every tool, a million shell
# calls or never blocking any narrower.
test_a_way_up_is_beyond_the_ceiling if {
	s := switching("reviewer", "wide", "agent")
	not s.allowed
	rules(s) == ["ceiling"]
	contains(s.reasons[0].message, "its max_shell_invocations 1000000 is above 200")
	contains(s.reasons[0].message, "its block_at_percent 255 is above 100")
	a := switching("reviewer", "admin-clone", "agent")
	rules(a) == ["ceiling"]
	contains(a.reasons[0].message, "its max_context_tokens 500000 is above 200000")
	rules(switching("reviewer", "never-block", "agent")) == ["ceiling"]
}

test_a_role_marked_privileged if {
	rules(switching("coder", "prod", "agent")) == ["privileged"]
}

test_operator_may_enter_any_role if {
	every to in ["admin", "ops", "coder", "prod", "anything-goes", "wide", "admin-clone"] {
		switching("reviewer", to, "operator").allowed
	}
}

test_unknown_role if {
	s := switching("coder", "root", "operator")
	rules(s) == ["unknown_role"]
	startswith(s.reasons[0].message, "role 'root' is not defined; known roles: admin, admin-clone, allow-none, anything-goes,")
}

test_who_switches_must_be_known if {
	rules(switching("coder", "reviewer", "someone")) == ["invalid_input"]
}

test_custom_switch_rules if {
	request := {"from": "reviewer", "to": "debugger", "by": "agent", "session": "s-1", "agent": "test"}
	s := switch_with(request, {"only_coder": {"switch_deny": {"reviewer may only switch to coder"}}})
	not s.allowed
	s.reasons == [{"code": "switch_denied", "rule": "harness.custom.only_coder", "message": "reviewer may only switch to coder"}]
}

test_an_agent_stays_within_its_max_role if {
	capped("coder", "reviewer", "agent", "coder").allowed
	capped("coder", "coder", "agent", "coder").allowed
	s := capped("reviewer", "coder", "agent", "reviewer")
	not s.allowed
	rules(s) == ["ceiling"]
	s.reasons[0].message == "role 'coder' is beyond 'reviewer', the most privileged role this agent may hold (its max_role): its max_context_tokens 200000 is above 150000; its max_shell_invocations 100 is above 0; its max_cost_usd $5.00 is above $3.00"

	# A max_role may be higher than the default ceiling.
	capped("reviewer", "wide", "agent", "wide").allowed
}

test_max_role_binds_agents_only if {
	capped("reviewer", "coder", "operator", "reviewer").allowed
	capped("reviewer", "coder", "agent", "").allowed
}

test_an_unknown_max_role_covers_nothing if {
	rules(capped("coder", "reviewer", "agent", "no-such-role")) == ["ceiling"]
}

# A max_role that a project's file defines covers nothing: the repository
# is the agent's to write, and would set its own ceiling. The same role of
# a user's file covers what it covers.
test_a_max_role_of_the_project_covers_nothing if {
	request := {"from": "reviewer", "to": "coder", "by": "agent", "session": "s-1", "agent": "test", "max_role": "anything-goes"}
	user := data.harness.switch with input as request
		with data.harness.roles as fixture.roles
		with data.harness.ceiling as fixture.ceiling
		with data.harness.custom as {}
	user.allowed
	project_roles := object.union(fixture.roles, {"anything-goes": object.union(fixture.roles["anything-goes"], {"source": "project"})})
	project := data.harness.switch with input as request
		with data.harness.roles as project_roles
		with data.harness.ceiling as fixture.ceiling
		with data.harness.custom as {}
	not project.allowed
	rules(project) == ["ceiling"]
	contains(project.reasons[0].message, "its max_role 'anything-goes' is a role this project defines, which covers no role")
}

# switch_targets answers for every role at once what switch answers for one.
test_switch_targets if {
	request := {"from": "reviewer", "by": "agent", "session": "s-1", "agent": "test", "max_role": "coder"}
	targets := data.harness.switch_targets with input as request
		with data.harness.roles as fixture.roles
		with data.harness.ceiling as fixture.ceiling
		with data.harness.custom as {}
	object.keys(targets) == object.keys(fixture.roles)
	every to, allowed in targets {
		allowed == capped("reviewer", to, "agent", "coder").allowed
	}
	targets.coder
	targets.reviewer
	not targets.debugger # beyond coder: more shell calls
	not targets.admin
}
