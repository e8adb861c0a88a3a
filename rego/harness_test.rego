# Tests of the decision policy, one or more per rule of section 4 of the
# harness contract. They run in `go test` (through OPA's tester) and with
# `opa test` on any compiled bundle: whatever roles, configuration and
# custom policies a project has, they decide with their own (fixture.roles
# and fixture.config in fixture_test.rego, the built-ins and the roles of
# rego/testdata/roles as the compiler makes them), and without the
# project's custom policies.
package harness.tests

# -- Helpers -----------------------------------------------------------------

call(role, tool) := {
	"role": role,
	"tool": tool,
	"arguments": {},
	"budget": {"tokens": 0, "shell": 0, "cost_micros": 0},
	"session": "s-1",
	"agent": "test",
}

spent(c, budget) := object.union(c, {"budget": budget})

decide(c) := decide_with(c, fixture.config)

# decide_with decides c with the fixture's roles and the configuration
# config.
decide_with(c, config) := d if {
	d := data.harness.decision with input as c
		with data.harness.roles as fixture.roles
		with data.harness.config as config
		with data.harness.schema_version as fixture.schema_version
		with data.harness.custom as {}
}

codes(d) := [r.code | some r in d.reasons]

warning_codes(d) := [w.code | some w in d.warnings]

# -- Rule 2: tool lists --------------------------------------------------------

test_coder_may_call_anything if {
	every t in ["ctx_read", "ctx_edit", "ctx_shell", "ctx_execute", "mcp__github__create_issue", "anything"] {
		decide(call("coder", t)).decision == "allow"
	}
}

test_admin_may_call_anything if {
	every t in ["ctx_edit", "ctx_shell", "deploy"] {
		decide(call("admin", t)).decision == "allow"
	}
}

test_reviewer_reads if {
	every t in ["ctx_read", "ctx_search", "ctx_tree", "ctx_review"] {
		decide(call("reviewer", t)).decision == "allow"
	}
}

test_reviewer_may_not_edit_or_shell if {
	every t in ["ctx_edit", "ctx_shell", "ctx_execute"] {
		d := decide(call("reviewer", t))
		d.decision == "deny"
		d.allowed == false
		codes(d) == ["tool_denied"]
	}
}

test_reviewer_unlisted_tool_not_allowed if {
	d := decide(call("reviewer", "ctx_write"))
	codes(d) == ["tool_not_allowed"]
	d.reasons[0].message == "tool 'ctx_write' is not allowed for role 'reviewer': no allowed pattern matches it"
}

test_ops_shell_but_not_edit if {
	decide(call("ops", "ctx_shell")).decision == "allow"
	codes(decide(call("ops", "ctx_edit"))) == ["tool_denied"]
}

test_prefix_pattern_matches_only_its_prefix if {
	decide(call("ctx-only", "ctx_read")).decision == "allow"
	codes(decide(call("ctx-only", "read"))) == ["tool_not_allowed"]
	codes(decide(call("ctx-only", "xctx_read"))) == ["tool_not_allowed"]
}

test_suffix_and_middle_patterns if {
	decide(call("shapes", "ctx_smart_read")).decision == "allow"
	decide(call("shapes", "mcp__github__list")).decision == "allow"
	codes(decide(call("shapes", "mcp__github__lister"))) == ["tool_not_allowed"]
	codes(decide(call("shapes", "ctx_reader"))) == ["tool_not_allowed"]
}

test_patterns_are_case_sensitive if {
	codes(decide(call("exact", "CTX_READ"))) == ["tool_not_allowed"]
}

test_denied_beats_allowed if {
	d := decide(call("ctx-but-edit", "ctx_edit"))
	codes(d) == ["tool_denied"]
	d.reasons[0].message == "tool 'ctx_edit' is denied for role 'ctx-but-edit'"
}

# -- Rule 1: exempt tools ------------------------------------------------------

test_denied_star_denies_all_but_exempt if {
	every t in ["ctx_read", "ctx_shell", "x"] {
		codes(decide(call("deny-all", t))) == ["tool_denied"]
	}
	decide(call("deny-all", "ctx_session")).decision == "allow"
}

test_empty_allow_list_allows_only_exempt if {
	codes(decide(call("allow-none", "ctx_read"))) == ["tool_not_allowed"]
	decide(call("allow-none", "ctx_session")).decision == "allow"
}

test_exempt_tools_come_from_config if {
	edit := {"shell_tools": fixture.config.shell_tools, "exempt_tools": {"ctx_edit": true}}
	decide_with(call("reviewer", "ctx_edit"), edit).decision == "allow"
	codes(decide_with(call("exact", "ctx_session"), edit)) == ["tool_not_allowed"]
}

# -- Rule 3: shell policy ------------------------------------------------------

test_shell_policy_deny_refuses_allowed_shell if {
	every t in ["ctx_shell", "ctx_execute"] {
		codes(decide(call("no-shell", t))) == ["shell_denied"]
	}
	decide(call("no-shell", "ctx_read")).decision == "allow"
}

test_shell_tools_come_from_config if {
	config := {"shell_tools": {"bash": true}, "exempt_tools": fixture.config.exempt_tools}
	codes(decide_with(call("no-shell", "bash"), config)) == ["shell_denied"]
	decide_with(call("no-shell", "ctx_shell"), config).decision == "allow"
}

test_compress_marks_shell_output if {
	d := decide(call("ops", "ctx_shell"))
	d.decision == "allow"
	d.shell_policy == "compress"
	d.compress_output == true
	decide(call("ops", "ctx_read")).compress_output == false
	decide(call("coder", "ctx_shell")).compress_output == false
}

# -- Rules 4 and 5: percent and levels ---------------------------------------

test_status_figures_of_the_seeds if {
	d := decide(spent(call("coder", "ctx_read"), {"tokens": 50000, "shell": 5, "cost_micros": 500000}))
	d.budget.tokens == {"used": 50000, "limit": 200000, "percent": 25, "level": "OK"}
	d.budget.shell == {"used": 5, "limit": 100, "percent": 5, "level": "OK"}
	d.budget.cost == {"used": 500000, "limit": 5000000, "percent": 10, "level": "OK"}
	d.signal == "OK"
	d.decision == "allow"
}

test_percent_truncates if {
	d := decide(spent(call("coder", "ctx_read"), {"tokens": 199999}))
	d.budget.tokens.percent == 99
	d.budget.tokens.level == "WARNING"
}

test_tokens_at_warning_threshold_warn if {
	d := decide(spent(call("coder", "ctx_read"), {"tokens": 170000}))
	d.decision == "warn"
	d.allowed == true
	d.signal == "WARNING"
	warning_codes(d) == ["budget_warning"]
	d.warnings[0].message == "tokens at 85% of the budget of role 'coder' (170000 of 200000)"
}

test_just_below_warning_is_ok if {
	d := decide(spent(call("coder", "ctx_read"), {"tokens": 159999}))
	d.decision == "allow"
	d.signal == "OK"
}

test_admin_warns_at_90 if {
	decide(spent(call("admin", "ctx_read"), {"tokens": 449999})).decision == "allow"
	decide(spent(call("admin", "ctx_read"), {"tokens": 450000})).decision == "warn"
}

test_cost_warning_in_dollars if {
	d := decide(spent(call("coder", "ctx_read"), {"cost_micros": 4250000}))
	d.warnings[0].message == "cost at 85% of the budget of role 'coder' ($4.25 of $5.00)"
}

test_limit_zero_warns_but_never_exhausts if {
	d := decide(spent(call("reviewer", "ctx_read"), {"shell": 3}))
	d.budget.shell == {"used": 3, "limit": 0, "percent": 100, "level": "WARNING"}
	d.decision == "warn"
}

# -- Rule 6: exhaustion ------------------------------------------------------

test_tokens_exhausted_deny_but_session_stays if {
	c := spent(call("coder", "ctx_read"), {"tokens": 200000})
	d := decide(c)
	d.decision == "deny"
	codes(d) == ["budget_exhausted"]
	d.reasons[0].message == "tokens budget of role 'coder' is exhausted: 200000 of 200000 used"
	d.signal == "EXHAUSTED"
	s := decide(object.union(c, {"tool": "ctx_session"}))
	s.decision == "warn"
	s.allowed == true
	s.warnings[0].message == "tokens budget of role 'coder' is exhausted (200000 of 200000): other tools are blocked"
}

test_cost_exhausted if {
	d := decide(spent(call("coder", "ctx_edit"), {"cost_micros": 5000000}))
	codes(d) == ["budget_exhausted"]
	d.budget.cost.percent == 100
}

test_block_at_lower_percent if {
	decide(spent(call("block-90", "ctx_read"), {"tokens": 899})).decision == "warn"
	codes(decide(spent(call("block-90", "ctx_read"), {"tokens": 900}))) == ["budget_exhausted"]
}

test_block_255_never_blocks if {
	c := spent(call("never-block", "ctx_shell"), {"tokens": 5000, "shell": 50, "cost_micros": 9000000})
	d := decide(c)
	d.decision == "warn"
	d.signal == "WARNING"
	d.budget.tokens.percent == 500
}

# -- Rule 7: shell budget admission ------------------------------------------

test_shell_99_of_100_allows_the_100th if {
	d := decide(spent(call("coder", "ctx_shell"), {"shell": 99}))
	d.allowed == true
}

test_shell_100_of_100_denies if {
	d := decide(spent(call("coder", "ctx_shell"), {"shell": 100}))
	d.decision == "deny"
	"shell_budget" in codes(d)
	d.reasons[_].message == "shell budget of role 'coder' admits 100 invocations and 100 are used"
}

test_shell_limit_zero_refuses_every_shell_call if {
	codes(decide(call("zero-shell", "ctx_shell"))) == ["shell_budget"]
	decide(call("zero-shell", "ctx_read")).decision == "allow"
}

test_shell_admission_follows_block_percent if {
	decide(spent(call("half", "ctx_shell"), {"shell": 4})).allowed == true
	"shell_budget" in codes(decide(spent(call("half", "ctx_shell"), {"shell": 5})))
}

# -- The decision object -------------------------------------------------------

# The example of section 3 of the contract, field for field.
test_contract_example if {
	c := spent(call("reviewer", "ctx_shell"), {"tokens": 50000, "shell": 0, "cost_micros": 500000})
	decide(c) == {
		"decision": "deny",
		"allowed": false,
		"role": "reviewer",
		"tool": "ctx_shell",
		"shell_policy": "track",
		"compress_output": false,
		"reasons": [{"code": "tool_denied", "message": "tool 'ctx_shell' is denied for role 'reviewer'"}],
		"warnings": [],
		"signal": "OK",
		"budget": {
			"tokens": {"used": 50000, "limit": 150000, "percent": 33, "level": "OK"},
			"shell": {"used": 0, "limit": 0, "percent": 0, "level": "OK"},
			"cost": {"used": 500000, "limit": 3000000, "percent": 16, "level": "OK"},
		},
	}
}

# -- Fail closed -------------------------------------------------------------

test_unknown_role_denies if {
	d := decide(call("nobody", "ctx_read"))
	codes(d) == ["unknown_role"]
	d.reasons[0].message == sprintf("role 'nobody' is not defined; known roles: %s", [concat(", ", sort(object.keys(fixture.roles)))])
	startswith(d.reasons[0].message, "role 'nobody' is not defined; known roles: admin, allow-none, anything-goes, block-90, coder,")
	codes(decide(call("nobody", "ctx_session"))) == ["unknown_role"]
}

test_invalid_input_denies if {
	codes(decide({"role": "coder"})) == ["invalid_input"]
	codes(decide({"role": "coder", "tool": 7})) == ["invalid_input"]
	codes(decide(spent(call("coder", "ctx_read"), {"tokens": -1}))) == ["invalid_input"]
	codes(decide(spent(call("coder", "ctx_read"), {"shell": 1.5}))) == ["invalid_input"]
	codes(decide(object.union(call("coder", "ctx_read"), {"budget": "lots"}))) == ["invalid_input"]
	codes(decide(object.union(call("coder", "ctx_read"), {"arguments": [1]}))) == ["invalid_input"]
	d := decide({"tool": "ctx_read"})
	d.reasons == [{"code": "invalid_input", "message": "input.role must be a non-empty string"}]
}

test_missing_budget_counts_as_zero if {
	d := decide({"role": "coder", "tool": "ctx_read"})
	d.decision == "allow"
	d.budget.tokens.used == 0
}

test_schema_mismatch_denies if {
	d := data.harness.decision with input as call("coder", "ctx_read")
		with data.harness.roles as fixture.roles
		with data.harness.config as fixture.config
		with data.harness.schema_version as 2
		with data.harness.custom as {}
	codes(d) == ["invalid_input"]
	contains(d.reasons[0].message, "schema_version 2")
}

# -- Listings, status and explanations -------------------------------------------

visible_for(role, tools) := v if {
	v := data.harness.visible with input as {"role": role, "tools": tools}
		with data.harness.roles as fixture.roles
		with data.harness.config as fixture.config
}

test_visible_follows_the_tool_lists_and_shell_policy if {
	tools := ["ctx_read", "ctx_edit", "ctx_shell", "ctx_session", "mcp__gh__list", 7]
	visible_for("reviewer", tools) == {"ctx_read", "ctx_session"}
	visible_for("coder", tools) == {"ctx_read", "ctx_edit", "ctx_shell", "ctx_session", "mcp__gh__list"}
	visible_for("no-shell", tools) == {"ctx_read", "ctx_edit", "ctx_session", "mcp__gh__list"}
	visible_for("deny-all", tools) == {"ctx_session"}
	visible_for("nobody", tools) == set()
}

# A listing shows a tool exactly when a call of it is not refused by the
# tool lists or the shell policy.
test_visible_agrees_with_decisions if {
	access := {"tool_denied", "tool_not_allowed", "shell_denied"}
	every role, _ in fixture.roles {
		every t in ["ctx_read", "ctx_edit", "ctx_shell", "ctx_execute", "ctx_session", "mcp__gh__list", "x_read", "other"] {
			refused := {c | some c in codes(decide(call(role, t))); c in access}
			_shown_unless_refused(visible_for(role, [t]), t, count(refused))
		}
	}
}

_shown_unless_refused(shown, t, 0) if t in shown

_shown_unless_refused(shown, t, n) if {
	n > 0
	not t in shown
}

status_of(role, budget) := s if {
	s := data.harness.status with input as {"role": role, "budget": budget}
		with data.harness.roles as fixture.roles
		with data.harness.config as fixture.config
}

test_status if {
	s := status_of("coder", {"tokens": 170000, "shell": 5, "cost_micros": 0})
	s.defined
	s.role == "coder"
	s.signal == "WARNING"
	s.budget.tokens == {"used": 170000, "limit": 200000, "percent": 85, "level": "WARNING"}
	s.budget.shell == {"used": 5, "limit": 100, "percent": 5, "level": "OK"}
	status_of("coder", {"tokens": 200000, "shell": 0, "cost_micros": 0}).signal == "EXHAUSTED"
	status_of("reviewer", {"tokens": 0, "shell": 1, "cost_micros": 0}).budget.shell.level == "WARNING"
	not status_of("nobody", {"tokens": 0, "shell": 0, "cost_micros": 0}).defined
}

# The status is the budget and signal every decision of that usage carries.
test_status_agrees_with_decisions if {
	every role in ["coder", "reviewer", "block-90", "never-block", "zero-shell"] {
		every usage in [
			{"tokens": 0, "shell": 0, "cost_micros": 0},
			{"tokens": 899, "shell": 9, "cost_micros": 900000},
			{"tokens": 5000, "shell": 50, "cost_micros": 9000000},
		] {
			s := status_of(role, usage)
			d := decide(spent(call(role, "ctx_session"), usage))
			s.budget == d.budget
			s.signal == d.signal
		}
	}
}

explain_of(c) := e if {
	e := data.harness.explanation with input as c
		with data.harness.roles as fixture.roles
		with data.harness.config as fixture.config
		with data.harness.custom as {}
}

test_explanation if {
	e := explain_of(call("ctx-but-edit", "ctx_edit"))
	e.denied_by == ["ctx_edit"]
	e.allowed_by == ["ctx_*"]
	e.decision == decide(call("ctx-but-edit", "ctx_edit"))
	e.exempt == false
	e.shell_tool == false
	e.limits == fixture.roles["ctx-but-edit"].limits
	explain_of(call("shapes", "mcp__gh__list")).allowed_by == ["mcp__*__list"]
	explain_of(call("coder", "ctx_shell")).shell_tool == true
	explain_of(call("coder", "ctx_session")).exempt == true
	explain_of(call("reviewer", "other")).allowed_by == []
}
