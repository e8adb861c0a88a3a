# Tests of the role switch rules (data.harness.switch).
package harness.tests

switching(from, to, by) := s if {
	s := data.harness.switch with input as {"from": from, "to": to, "by": by, "session": "s-1", "agent": "test"}
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
		rules(s) == ["privileged_role"]
		startswith(s.reasons[0].message, sprintf("role '%s' is privileged: an agent may not switch itself into it", [to]))
	}
}

test_agent_may_not_enter_an_unrestricted_role if {
	r := object.union(custom({}), {"unrestricted": true})
	s := switching("coder", "anything-goes", "agent") with data.harness.roles["anything-goes"] as r
	not s.allowed
	rules(s) == ["unrestricted_role"]
}

test_a_role_marked_privileged if {
	r := object.union(custom({}), {"privileged": true})
	rules(switching("coder", "prod", "agent")) == ["privileged_role"] with data.harness.roles.prod as r
}

test_operator_may_enter_any_role if {
	every to in ["admin", "ops", "coder"] {
		switching("reviewer", to, "operator").allowed
	}
}

test_unknown_role if {
	s := switching("coder", "root", "operator")
	rules(s) == ["unknown_role"]
	startswith(s.reasons[0].message, "role 'root' is not defined; known roles: admin, coder")
}

test_who_switches_must_be_known if {
	rules(switching("coder", "reviewer", "someone")) == ["invalid_input"]
}

test_custom_switch_rules if {
	s := switching("reviewer", "debugger", "agent") with data.harness.custom.only_coder.switch_deny as {"reviewer may only switch to coder"}
	not s.allowed
	s.reasons == [{"code": "switch_denied", "rule": "harness.custom.only_coder", "message": "reviewer may only switch to coder"}]
}

capped(from, to, by, max_role) := s if {
	s := data.harness.switch with input as {"from": from, "to": to, "by": by, "session": "s-1", "agent": "test", "max_role": max_role}
}

test_an_agent_stays_within_its_max_role if {
	capped("coder", "reviewer", "agent", "coder").allowed
	capped("coder", "coder", "agent", "coder").allowed
	s := capped("reviewer", "coder", "agent", "reviewer")
	not s.allowed
	rules(s) == ["max_role"]
	s.reasons[0].message == "role 'coder' is beyond 'reviewer', the most privileged role this agent may hold"
}

test_max_role_binds_agents_only if {
	capped("reviewer", "coder", "operator", "reviewer").allowed
	capped("reviewer", "coder", "agent", "").allowed
}

test_an_unknown_max_role_covers_nothing if {
	rules(capped("coder", "reviewer", "agent", "no-such-role")) == ["max_role"]
}
