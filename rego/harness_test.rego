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

# decide_with decides c with the fixture's roles and agents and the
# configuration config.
decide_with(c, config) := d if {
	d := data.harness.decision with input as c
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
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
	edit := object.union(object.remove(fixture.config, ["exempt_tools"]), {"exempt_tools": {"ctx_edit": true}})
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
	config := object.union(object.remove(fixture.config, ["shell_tools"]), {"shell_tools": {"bash": true}})
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
		"shell_tool": true,
		"compress_output": false,
		"reasons": [{"code": "tool_denied", "message": "tool 'ctx_shell' is denied for role 'reviewer'"}],
		"warnings": [],
		"signal": "OK",
		"budget": {
			"tokens": {"used": 50000, "limit": 150000, "percent": 33, "level": "OK"},
			"shell": {"used": 0, "limit": 0, "percent": 0, "level": "OK"},
			"cost": {"used": 500000, "limit": 3000000, "percent": 16, "level": "OK"},
		},
		"agent_budget": null,
	}
}

# -- Fail closed -------------------------------------------------------------

test_unknown_role_denies if {
	d := decide(call("nobody", "ctx_read"))
	codes(d) == ["unknown_role"]
	d.reasons[0].message == sprintf("role 'nobody' is not defined; known roles: %s", [concat(", ", sort(object.keys(fixture.roles)))])
	startswith(d.reasons[0].message, "role 'nobody' is not defined; known roles: admin, admin-clone, allow-none, anything-goes, block-90, careful, coder,")
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
		with data.harness.agents as fixture.agents
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
		with data.harness.agents as fixture.agents
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
		with data.harness.agents as fixture.agents
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
		with data.harness.agents as fixture.agents
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

# -- Where a tool comes from (contract section 8) ---------------------------------

from_upstream(role, tool, up, ut) := object.union(call(role, tool), {"upstream": up, "upstream_tool": ut})

# An upstream's ctx_shell is a shell tool behind a prefix too: shell policy,
# shell budget and compression apply.
test_an_upstreams_shell_tool_is_a_shell_tool_by_its_own_name if {
	codes(decide(from_upstream("no-shell", "lean__ctx_shell", "lean", "ctx_shell"))) == ["shell_denied"]
	codes(decide(from_upstream("zero-shell", "lean__ctx_shell", "lean", "ctx_shell"))) == ["shell_budget"]
	"shell_budget" in codes(decide(spent(from_upstream("coder", "lean__ctx_shell", "lean", "ctx_shell"), {"shell": 100})))
	decide(from_upstream("ops", "lean__ctx_shell", "lean", "ctx_shell")).compress_output == true
	decide(from_upstream("coder", "lean__ctx_shell", "lean", "ctx_shell")).shell_tool == true
	decide(from_upstream("coder", "lean__ctx_read", "lean", "ctx_read")).shell_tool == false
	decide(from_upstream("coder", "ctx_shell", "", "")).shell_tool == true
}

# A denied pattern that matches either name denies; an allowed pattern
# must match the name the agent called.
test_a_deny_matches_either_name if {
	codes(decide(from_upstream("reviewer", "lean__ctx_shell", "lean", "ctx_shell"))) == ["tool_denied"]
	codes(decide(from_upstream("ctx-but-edit", "ctx_fs_edit", "fs", "ctx_edit"))) == ["tool_denied"]
	decide(from_upstream("ctx-but-edit", "ctx_fs_write", "fs", "ctx_write")).decision == "allow"
}

test_allowed_matches_the_name_the_agent_called if {
	codes(decide(from_upstream("reviewer", "lean__ctx_read", "lean", "ctx_read"))) == ["tool_not_allowed"]
	decide(from_upstream("reviewer", "ctx_read", "lean", "ctx_read")).decision == "allow"
	codes(decide(from_upstream("exact", "mcp__lean__ctx_read", "lean", "ctx_read"))) == ["tool_not_allowed"]
}

# Only the harness's own tools are exempt: an upstream's ctx_session is not.
test_an_upstreams_tool_is_never_exempt if {
	codes(decide(from_upstream("deny-all", "ctx_session", "lean", "ctx_session"))) == ["tool_denied"]
	codes(decide(spent(from_upstream("coder", "ctx_session", "lean", "ctx_session"), {"tokens": 200000}))) == ["budget_exhausted"]
	decide(from_upstream("deny-all", "ctx_session", "", "")).decision == "allow"
}

test_visible_knows_where_tools_come_from if {
	tools := [
		{"name": "lean__ctx_shell", "upstream": "lean", "upstream_tool": "ctx_shell"},
		{"name": "lean__ctx_read", "upstream": "lean", "upstream_tool": "ctx_read"},
		{"name": "ctx_read", "upstream": "lean", "upstream_tool": "ctx_read"},
		{"name": "ctx_session", "upstream": "lean", "upstream_tool": "ctx_session"},
		{"name": "ctx_session"},
	]
	visible_for("reviewer", tools) == {"ctx_read", "ctx_session"}
	visible_for("no-shell", tools) == {"lean__ctx_read", "ctx_read", "ctx_session"}
	visible_for("deny-all", tools) == {"ctx_session"}
}

# -- Malformed calls ------------------------------------------------------------------

test_arguments_must_be_an_object if {
	every args in ["rm -rf /x", ["rm", "-rf"], 7, true] {
		d := decide(object.union(call("coder", "ctx_shell"), {"arguments": args}))
		codes(d) == ["invalid_input"]
		startswith(d.reasons[0].message, "input.arguments must be an object")
	}
	decide(object.union(call("coder", "ctx_shell"), {"arguments": null})).decision == "allow"
	decide(object.remove(call("coder", "ctx_shell"), ["arguments"])).decision == "allow"
}

# -- Agent budgets across sessions (contract section 8) ---------------------------------

# The fixture's agent "budgeted" has a daily budget of 1000 tokens, 3 shell
# calls and $1 (warn at 80%); "capped-total" 2 shell calls in all (warn at
# 50%).
by_agent(role, tool, agent, usage) := object.union(call(role, tool), {"agent": agent, "agent_budget": usage})

agent_usage(tokens, shell, cost) := {"tokens": tokens, "shell": shell, "cost_micros": cost}

test_an_agent_budget_needs_the_agents_usage if {
	d := decide(object.union(call("coder", "ctx_read"), {"agent": "budgeted"}))
	codes(d) == ["invalid_input"]
	contains(d.reasons[0].message, "input.agent_budget must give the usage")
	codes(decide(by_agent("coder", "ctx_read", "budgeted", agent_usage(-1, 0, 0)))) == ["invalid_input"]
	decide(call("coder", "ctx_read")).agent_budget == null
}

test_an_agent_budget_below_its_warning if {
	d := decide(by_agent("coder", "ctx_read", "budgeted", agent_usage(799, 2, 0)))
	d.decision == "allow"
	d.agent_budget == {
		"agent": "budgeted", "period": "day", "signal": "OK",
		"tokens": {"used": 799, "limit": 1000, "percent": 79, "level": "OK"},
		"shell": {"used": 2, "limit": 3, "percent": 66, "level": "OK"},
		"cost": {"used": 0, "limit": 1000000, "percent": 0, "level": "OK"},
	}
}

test_an_agent_budget_warns if {
	d := decide(by_agent("coder", "ctx_read", "budgeted", agent_usage(800, 0, 0)))
	d.decision == "warn"
	warning_codes(d) == ["agent_budget_warning"]
	d.warnings[0].message == "tokens at 80% of the budget of agent 'budgeted' for the day (800 of 1000)"
	d.signal == "OK"
	d.agent_budget.signal == "WARNING"
}

test_an_exhausted_agent_budget_denies if {
	d := decide(by_agent("coder", "ctx_read", "budgeted", agent_usage(0, 0, 1000000)))
	codes(d) == ["agent_budget_exhausted"]
	d.reasons[0].message == "cost budget of agent 'budgeted' for the day is exhausted: $1.00 of $1.00 used"
	d.budget.cost.level == "OK"
	s := decide(by_agent("coder", "ctx_session", "budgeted", agent_usage(0, 0, 1000000)))
	s.decision == "warn"
	s.warnings[0].message == "cost budget of agent 'budgeted' for the day is exhausted ($1.00 of $1.00): other tools are blocked"
}

test_the_agents_shell_budget if {
	decide(by_agent("coder", "ctx_shell", "capped-total", agent_usage(0, 1, 0))).allowed
	d := decide(by_agent("coder", "ctx_shell", "capped-total", agent_usage(0, 2, 0)))
	"agent_shell_budget" in codes(d)
	d.reasons[_].message == "shell budget of agent 'capped-total' for the whole time admits 2 invocations and 2 are used"
	decide(by_agent("coder", "ctx_read", "capped-total", agent_usage(9999999, 1, 0))).decision == "warn"
	object.keys(decide(by_agent("coder", "ctx_read", "capped-total", agent_usage(0, 0, 0))).agent_budget) == {"agent", "period", "signal", "shell"}
}

# The most restrictive wins: the session's and the agent's refusals come
# together.
test_session_and_agent_budgets_together if {
	c := spent(by_agent("coder", "ctx_shell", "budgeted", agent_usage(1000, 3, 0)), {"tokens": 200000, "shell": 100})
	codes(decide(c)) == ["agent_budget_exhausted", "agent_budget_exhausted", "agent_shell_budget", "budget_exhausted", "budget_exhausted", "shell_budget"]
}

test_the_budget_of_every_agent if {
	every_agent := {"*": fixture.agents.budgeted}
	d := data.harness.decision with input as by_agent("coder", "ctx_read", "anyone", agent_usage(1000, 0, 0))
		with data.harness.roles as fixture.roles
		with data.harness.agents as every_agent
		with data.harness.config as fixture.config
		with data.harness.custom as {}
	codes(d) == ["agent_budget_exhausted"]
	d.agent_budget.agent == "anyone"
}

test_status_and_levels_carry_the_agent_budget if {
	s := data.harness.status with input as {"role": "coder", "budget": agent_usage(0, 0, 0), "agent": "budgeted", "agent_budget": agent_usage(900, 0, 0)}
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
	s.agent_budget.tokens.level == "WARNING"
	s.signal == "OK"
	l := data.harness.levels with input as {"usages": [
		{"role": "coder", "budget": agent_usage(0, 0, 0), "agent": "budgeted", "agent_budget": agent_usage(1000, 2, 0)},
		{"role": "coder", "budget": agent_usage(0, 0, 0), "agent": "test"},
	]}
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
	l[0].agent == {"tokens": "EXHAUSTED", "shell": "OK", "cost": "OK"}
	l[1].agent == null
}

# The decision and the rules one by one agree on agent budgets (the Go
# tests hold them equal over a grid; this is the example).
test_decision_with_an_agent_budget if {
	c := by_agent("coder", "ctx_read", "budgeted", agent_usage(10, 0, 0))
	full := data.harness.full_decision with input as c
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
		with data.harness.config as fixture.config
		with data.harness.custom as {}
	decide(c) == full
}

# -- Self-protection ----------------------------------------------------------------------

protected_config := object.union(fixture.config, {"protect": object.union(fixture.config.protect, {
	"home": "/home/dev",
	"paths": ["/home/dev/.lean-ctx", "/home/dev/ledgers/main.db", "/srv/harness/state", "/srv/logs/decisions.jsonl"],
	"above": [
		{"dir": "/home/dev", "rest": "ledgers/main.db", "least": 2},
		{"dir": "/srv/harness", "rest": "state", "least": 1},
		{"dir": "/srv", "rest": "harness/state", "least": 1},
	],
})})

protected(c) := decide_with(c, protected_config)

with_args(role, tool, args) := object.union(call(role, tool), {"arguments": args})

test_edits_of_the_harness_files_are_refused if {
	every args in [
		{"file_path": "/home/dev/.lean-ctx/roles/wide.toml"},
		{"path": "~/.lean-ctx/harness.toml"},
		{"path": "$HOME/.lean-ctx/policies/x.rego"},
		{"path": "~/ledgers/main.db"},
		{"path": "$HOME/ledgers/main.db"},
		{"path": "${HOME}/ledgers/main.db"},
		{"path": "/home/dev/ledgers/main.db"},
		{"path": ".lean-ctx/policies/destructive_shell.rego"},
		{"path": "/work/app/pkg/../.lean-ctx/roles/r.toml"},
		{"notebook_path": "/home/dev/.claude/settings.json"},
		{"file_path": "/work/app/.claude/settings.local.json"},
		{"path": "/srv/harness/state/ledger.db"},
		{"path": "/srv/harness/state"},
		{"path": "/home/dev/.local/state/lean-ctx/harness/events.jsonl"},
		{"edits": [{"path": "/srv/logs/decisions.jsonl"}]},
		{"paths": ["ok.txt", "/home/dev/.lean-ctx/x"]},
		{"path": "/srv/harness//state/ledger.db"},
		{"path": "/srv/tmp/../harness/./state/ledger.db"},
		{"uri": "file:///srv/logs/decisions.jsonl"},
		{"file_path": "/home/dev/.claude//settings.json"},
	] {
		d := protected(with_args("admin", "ctx_edit", args))
		codes(d) == ["harness_files"]
	}
	codes(protected(from_upstream("coder", "fs__write_file", "fs", "write_file"))) == []
	codes(protected(object.union(from_upstream("coder", "fs__write_file", "fs", "write_file"), {"arguments": {"path": "/home/dev/.lean-ctx/harness.toml"}}))) == ["harness_files"]
	codes(protected(with_args("coder", "Edit_Notebook", {"path": "~/.lean-ctx/a"}))) == ["harness_files"]
}

# A path an edit changes, as the file system resolves it (input.resolved):
# through a symbolic link into the harness's files, or unresolved, it is
# refused; resolved elsewhere, or not a path argument, it is not.
test_edits_through_links_are_refused if {
	every c in [
		{"path": "notes/roles/coder.toml", "resolved": ["/home/dev/.lean-ctx/roles/coder.toml"]},
		{"path": "/work/app/cfg/ledger.db", "resolved": ["/work/app/ledger.db", "/srv/harness/state/ledger.db"]},
		{"path": "docs/x.rego", "resolved": ["/work/app/.lean-ctx/policies/x.rego"]},
		{"path": "deep/x", "resolved": null},
	] {
		e := object.union(with_args("coder", "ctx_edit", {"path": c.path}), {"resolved": {c.path: c.resolved}})
		codes(protected(e)) == ["harness_files"]
	}
	every c in [
		{"tool": "ctx_edit", "args": {"path": "lib/x.go"}, "resolved": {"lib/x.go": ["/work/app/src/x.go"]}},
		{"tool": "ctx_read", "args": {"path": "notes/harness.toml"}, "resolved": {"notes/harness.toml": ["/home/dev/.lean-ctx/harness.toml"]}},
		{"tool": "ctx_edit", "args": {"path": "a.go", "content": "n/h"}, "resolved": {"n/h": ["/home/dev/.lean-ctx/harness.toml"]}},
	] {
		protected(object.union(with_args("coder", c.tool, c.args), {"resolved": c.resolved})).decision == "allow"
	}
}

test_other_edits_pass if {
	every args in [
		{"file_path": "/work/app/main.go"},
		{"path": "docs/lean-ctx.md", "new_string": "put roles in ~/.lean-ctx/roles"},
		{"path": "/srv/harness/statement.txt"},
		{"path": "/work/app/.lean-ctxx/notes"},
	] {
		protected(with_args("coder", "ctx_edit", args)).decision == "allow"
	}
	protected(with_args("coder", "ctx_read", {"path": "/home/dev/.lean-ctx/roles/x.toml"})).decision == "allow"
}

test_shell_commands_on_the_harness_files_are_refused if {
	every cmd in [
		"rm -rf ~/.lean-ctx",
		"cat /srv/harness/state/ledger.db",
		"sqlite3 ~/.local/state/lean-ctx/harness/ledger.db 'update sessions set tokens = 0'",
		"echo x > .claude/settings.json",
		"cd /home/dev && mv .lean-ctx .old",
		"truncate -s0 /srv/logs/decisions.jsonl",
		"truncate -s0 /srv/logs//decisions.jsonl",
		"cd ~/.claude && sed -i /hooks/d settings.json",
		"rm -rf .claude",
		"cd /srv/harness && rm -rf state",
		"cd /srv && mv harness /tmp",
		"cd ~ && rm ledgers/main.db",
	] {
		codes(protected(with_args("admin", "ctx_shell", {"command": cmd}))) == ["harness_files"]
	}
}

test_the_operators_commands_are_refused if {
	every cmd in [
		"harness role set admin --session s-1",
		"go run ./cmd/harness budget reset --session s-1",
		"/usr/local/bin/harness  role   set ops",
		"h=harness; $h budget reset --session x",
	] {
		d := protected(with_args("coder", "ctx_shell", {"command": cmd}))
		codes(d) == ["operator_command"]
	}
	every cmd in ["ls -la", "harness role switch reviewer --session s-1", "echo role settings", "harness budget --session s"] {
		protected(with_args("coder", "ctx_shell", {"command": cmd})).decision == "allow"
	}
}

test_self_protection_can_be_turned_off if {
	off := object.union(protected_config, {"protect": object.union(protected_config.protect, {"enabled": false})})
	decide_with(with_args("coder", "ctx_shell", {"command": "harness role set admin"}), off).decision == "allow"
	decide_with(with_args("coder", "ctx_edit", {"path": "~/.lean-ctx/harness.toml"}), off).decision == "allow"
}

# -- Custom policies' messages are bounded ---------------------------------------------------

flood(n) := {sprintf("refusal %03d", [i]) | some i, _ in split(sprintf("%0*d", [n, 0]), "")}

test_custom_messages_are_capped if {
	d := data.harness.decision with input as call("coder", "ctx_read")
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
		with data.harness.config as fixture.config
		with data.harness.custom as {"flood": {"deny": flood(100), "warn": {concat("", ["w", sprintf("%01500d", [0])])}}}
	count(d.reasons) == 20
	d.reasons[19] == {"code": "policy", "message": "… and 81 more refusals of custom policies", "policy": "harness.custom"}
	d.reasons[0].message == "refusal 000"
	count(d.warnings) == 1
	count(d.warnings[0].message) == 1024 + count("… (cut)")
	endswith(d.warnings[0].message, "… (cut)")
}

# -- What a session may still spend ---------------------------------------------------

allowance_of(c) := a if {
	a := data.harness.allowance with input as c
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
		with data.harness.config as fixture.config
}

test_allowance if {
	allowance_of(spent(call("coder", "ctx_read"), {"tokens": 150000, "cost_micros": 4000000})) == {"tokens": 50000, "cost": 1000000}
	allowance_of(spent(call("coder", "ctx_read"), {"tokens": 250000})).tokens == 0
	allowance_of(spent(call("block-90", "ctx_read"), {"tokens": 100})).tokens == 800
	allowance_of(call("never-block", "ctx_read")) == {"tokens": null, "cost": null}

	# The agent's budget leaves less: it is what is left.
	allowance_of(by_agent("coder", "ctx_read", "budgeted", agent_usage(990, 0, 999999))) == {"tokens": 10, "cost": 1}
	allowance_of(by_agent("never-block", "ctx_read", "capped-total", agent_usage(0, 0, 0))) == {"tokens": null, "cost": null}
}

# -- Ask (contract section 8) ----------------------------------------------------

test_ask_waits_for_a_person if {
	d := decide(call("careful", "ctx_shell"))
	d.decision == "ask"
	d.allowed == false
	codes(d) == ["approval_required"]
	d.reasons[0].message == "tool 'ctx_shell' needs a person's approval for role 'careful'"
}

test_ask_only_what_the_list_names if {
	decide(call("careful", "ctx_read")).decision == "allow"
	decide(call("careful", "mcp__github__create_issue")).decision == "allow"
}

test_ask_matches_either_name if {
	d := decide(object.union(call("careful", "lean__ctx_shell"), {"upstream": "lean", "upstream_tool": "ctx_shell"}))
	d.decision == "ask"
	decide(object.union(call("careful", "mcp__deploy__release"), {"upstream": "deploy", "upstream_tool": "release"})).decision == "ask"
}

test_deny_beats_ask if {
	# A denied tool is denied, never asked for.
	d := decide(call("careful", "ctx_edit"))
	d.decision == "deny"
	codes(d) == ["tool_denied"]

	# An exhausted budget denies a tool the role asks for.
	e := decide(spent(call("careful", "ctx_shell"), {"tokens": 1000, "shell": 0, "cost_micros": 0}))
	e.decision == "deny"
	codes(e) == ["budget_exhausted"]
}

test_ask_beats_warn if {
	d := decide(spent(call("careful", "ctx_shell"), {"tokens": 850, "shell": 0, "cost_micros": 0}))
	d.decision == "ask"
	d.allowed == false
	codes(d) == ["approval_required"]
	warning_codes(d) == ["budget_warning"]
}

test_exempt_tools_are_never_asked_for if {
	decide(call("careful", "ctx_session")).decision == "allow"
}

test_ask_explained if {
	x := data.harness.explanation with input as call("careful", "git_push")
		with data.harness.roles as fixture.roles
		with data.harness.agents as fixture.agents
		with data.harness.config as fixture.config
		with data.harness.schema_version as fixture.schema_version
		with data.harness.custom as {}
	x.asked_by == ["git_push"]
	x.decision.decision == "ask"
}

# -- The decision, rule by rule and quickly ---------------------------------------------

# A call as the engine sends it: every field given.
complete(role, tool, up, ut, args, tokens, shell, cost) := {
	"role": role, "tool": tool, "upstream": up, "upstream_tool": ut, "arguments": args,
	"budget": {"tokens": tokens, "shell": shell, "cost_micros": cost},
	"session": "s-1", "agent": "test", "project": "",
}

# decision (decision.rego) decides what full_decision, the rules one by one,
# decides: calls of every kind the quick rules are for (the Go tests hold
# the two equal over grids of calls and arbitrary ones; these are examples).
test_the_decision_is_the_rules_decision if {
	every c in [
		complete("coder", "ctx_read", "", "", {"path": "main.go"}, 1234, 3, 20017),
		complete("ops", "ctx_shell", "", "", {"command": "go test ./..."}, 0, 10, 0),
		complete("reviewer", "ctx_edit", "", "", {}, 0, 0, 0),
		complete("reviewer", "lean__x", "lean", "ctx_shell", {}, 0, 0, 0),
		complete("coder", "ctx_session", "", "", {}, 100, 0, 0),
		complete("coder", "ctx_read", "", "", {}, 170001, 0, 0),
		complete("coder", "ctx_shell", "", "", {}, 0, 100, 0),
		complete("no-shell", "ctx_shell", "", "", {}, 0, 0, 0),
		complete("coder", "ctx_edit", "", "", {"path": "~/.lean-ctx/harness.toml"}, 0, 0, 0),
	] {
		quick := data.harness.decision with input as c
			with data.harness.roles as fixture.roles
			with data.harness.agents as fixture.agents
			with data.harness.config as fixture.config
			with data.harness.custom as {}
		full := data.harness.full_decision with input as c
			with data.harness.roles as fixture.roles
			with data.harness.agents as fixture.agents
			with data.harness.config as fixture.config
			with data.harness.custom as {}
		quick == full
	}
}
