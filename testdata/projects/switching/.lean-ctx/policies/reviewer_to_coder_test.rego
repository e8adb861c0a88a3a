package harness.custom.reviewer_to_coder_test

import data.harness.custom.reviewer_to_coder

switching(from, to, by) := {"from": from, "to": to, "by": by, "session": "s", "agent": "a"}

test_reviewer_to_coder_allowed if {
	count(reviewer_to_coder.switch_deny) == 0 with input as switching("reviewer", "coder", "agent")
}

test_reviewer_elsewhere_refused if {
	count(reviewer_to_coder.switch_deny) == 1 with input as switching("reviewer", "debugger", "agent")
}

test_operator_not_bound if {
	count(reviewer_to_coder.switch_deny) == 0 with input as switching("reviewer", "debugger", "operator")
}

test_through_the_switch_decision if {
	s := data.harness.switch with input as switching("reviewer", "debugger", "agent")
	not s.allowed
	s.reasons[0].rule == "harness.custom.reviewer_to_coder"
}
