package harness.custom.ops_reason_test

import data.harness.custom.ops_reason

call(role, args) := {"role": role, "tool": "ctx_shell", "arguments": args}

test_ops_needs_a_reason if {
	count(ops_reason.deny) == 1 with input as call("ops", {"command": "kubectl rollout restart deploy/api"})
	count(ops_reason.deny) == 1 with input as call("ops", {"command": "x", "reason": "  because "})
	count(ops_reason.deny) == 0 with input as call("ops", {"command": "x", "reason": "restart after the config change"})
}

test_other_roles_need_none if {
	count(ops_reason.deny) == 0 with input as call("coder", {"command": "make"})
}

test_decision if {
	d := data.harness.decision with input as call("ops", {"command": "make deploy"})
	d.decision == "deny"
	d.reasons[0].policy == "harness.custom.ops_reason"
}
