# Tests of the decision policy, one or more per rule of section 4 of the
# harness contract. They run with the compiled built-in roles as data: in
# `go test` (through OPA's tester) and with `opa test` on a compiled bundle.
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

decide(c) := d if {
	d := data.harness.decision with input as c
}

codes(d) := [r.code | some r in d.reasons]

warning_codes(d) := [w.code | some w in d.warnings]

# A compiled matcher for the tests' own roles.
matcher(patterns) := {
	"all": "*" in patterns,
	"exact": {p: true | some p in patterns; not contains(p, "*")},
	"prefixes": [trim_suffix(p, "*") | some p in patterns; endswith(p, "*"); p != "*"; not startswith(p, "*")],
	"suffixes": [trim_prefix(p, "*") | some p in patterns; startswith(p, "*"); p != "*"; not endswith(p, "*")],
	"globs": [p | some p in patterns; startswith(p, "*"); endswith(p, "*"); p != "*"],
	"patterns": sort(patterns),
}

# The thresholds the compiler derives from limits (see NewThreshold).
thresholds(l) := {dim: _threshold(l[key], l.warn_percent, l.block_percent) |
	some dim, key in {"tokens": "tokens", "shell": "shell", "cost": "cost_micros"}
}

_threshold(limit, warn, block) := object.union(
	{"warn_at": _warn_at(limit, warn)},
	object.union(
		{"admits": floor((limit * block) / 100) | block <= 100},
		{"exhausted_at": ceil((limit * block) / 100) | block <= 100; limit > 0},
	),
)

_warn_at(limit, warn) := ceil((limit * warn) / 100) if limit > 0

else := 1

# A compiled role: everything allowed, the coder's limits, unless overridden.
custom(over) := object.union(base, {"thresholds": thresholds(base.limits)}) if {
	base := object.union(_custom_defaults, over)
}

_custom_defaults := {
	"source": "project",
	"description": "test role",
	"shell_policy": "track",
	"privileged": false,
	"unrestricted": false,
	"allowed": matcher(["*"]),
	"denied": matcher([]),
	"limits": {"tokens": 200000, "shell": 100, "cost_micros": 5000000, "warn_percent": 80, "block_percent": 100},
	"io": {},
}

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
	r := custom({"allowed": matcher(["ctx_*"])})
	decide(call("t", "ctx_read")).decision == "allow" with data.harness.roles.t as r
	codes(decide(call("t", "read"))) == ["tool_not_allowed"] with data.harness.roles.t as r
	codes(decide(call("t", "xctx_read"))) == ["tool_not_allowed"] with data.harness.roles.t as r
}

test_suffix_and_middle_patterns if {
	r := custom({"allowed": {
		"all": false, "exact": {}, "prefixes": [], "suffixes": ["_read"],
		"globs": ["mcp__*__list"], "patterns": ["*_read", "mcp__*__list"],
	}})
	decide(call("t", "ctx_smart_read")).decision == "allow" with data.harness.roles.t as r
	decide(call("t", "mcp__github__list")).decision == "allow" with data.harness.roles.t as r
	codes(decide(call("t", "mcp__github__lister"))) == ["tool_not_allowed"] with data.harness.roles.t as r
	codes(decide(call("t", "ctx_reader"))) == ["tool_not_allowed"] with data.harness.roles.t as r
}

test_patterns_are_case_sensitive if {
	r := custom({"allowed": matcher(["ctx_read"])})
	codes(decide(call("t", "CTX_READ"))) == ["tool_not_allowed"] with data.harness.roles.t as r
}

test_denied_beats_allowed if {
	r := custom({"allowed": matcher(["ctx_*"]), "denied": matcher(["ctx_edit"])})
	d := decide(call("t", "ctx_edit")) with data.harness.roles.t as r
	codes(d) == ["tool_denied"]
	d.reasons[0].message == "tool 'ctx_edit' is denied for role 't'"
}

# -- Rule 1: exempt tools ------------------------------------------------------

test_denied_star_denies_all_but_exempt if {
	r := custom({"denied": matcher(["*"])})
	every t in ["ctx_read", "ctx_shell", "x"] {
		codes(decide(call("t", t))) == ["tool_denied"] with data.harness.roles.t as r
	}
	decide(call("t", "ctx_session")).decision == "allow" with data.harness.roles.t as r
}

test_empty_allow_list_allows_only_exempt if {
	r := custom({"allowed": matcher([])})
	codes(decide(call("t", "ctx_read"))) == ["tool_not_allowed"] with data.harness.roles.t as r
	decide(call("t", "ctx_session")).decision == "allow" with data.harness.roles.t as r
}

test_exempt_tools_come_from_config if {
	decide(call("reviewer", "ctx_edit")).decision == "allow" with data.harness.config.exempt_tools as {"ctx_edit": true}
	r := custom({"allowed": matcher(["ctx_read"])})
	codes(decide(call("t", "ctx_session"))) == ["tool_not_allowed"] with data.harness.roles.t as r
		with data.harness.config.exempt_tools as {}
}

# -- Rule 3: shell policy ------------------------------------------------------

test_shell_policy_deny_refuses_allowed_shell if {
	r := custom({"shell_policy": "deny"})
	every t in ["ctx_shell", "ctx_execute"] {
		d := decide(call("t", t)) with data.harness.roles.t as r
		codes(d) == ["shell_denied"]
	}
	decide(call("t", "ctx_read")).decision == "allow" with data.harness.roles.t as r
}

test_shell_tools_come_from_config if {
	r := custom({"shell_policy": "deny"})
	codes(decide(call("t", "bash"))) == ["shell_denied"] with data.harness.roles.t as r
		with data.harness.config.shell_tools as {"bash": true}
	decide(call("t", "ctx_shell")).decision == "allow" with data.harness.roles.t as r
		with data.harness.config.shell_tools as {"bash": true}
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
	r := custom({"limits": {"tokens": 1000, "shell": 10, "cost_micros": 1000000, "warn_percent": 50, "block_percent": 90}})
	decide(spent(call("t", "ctx_read"), {"tokens": 899})).decision == "warn" with data.harness.roles.t as r
	codes(decide(spent(call("t", "ctx_read"), {"tokens": 900}))) == ["budget_exhausted"] with data.harness.roles.t as r
}

test_block_255_never_blocks if {
	r := custom({"limits": {"tokens": 1000, "shell": 10, "cost_micros": 1000000, "warn_percent": 80, "block_percent": 255}})
	c := spent(call("t", "ctx_shell"), {"tokens": 5000, "shell": 50, "cost_micros": 9000000})
	d := decide(c) with data.harness.roles.t as r
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
	r := custom({"limits": {"tokens": 1000, "shell": 0, "cost_micros": 1000000, "warn_percent": 80, "block_percent": 100}})
	d := decide(call("t", "ctx_shell")) with data.harness.roles.t as r
	codes(d) == ["shell_budget"]
	decide(call("t", "ctx_read")).decision == "allow" with data.harness.roles.t as r
}

test_shell_admission_follows_block_percent if {
	r := custom({"limits": {"tokens": 1000, "shell": 10, "cost_micros": 1000000, "warn_percent": 50, "block_percent": 50}})
	decide(spent(call("t", "ctx_shell"), {"shell": 4})).allowed == true with data.harness.roles.t as r
	"shell_budget" in codes(decide(spent(call("t", "ctx_shell"), {"shell": 5}))) with data.harness.roles.t as r
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
	startswith(d.reasons[0].message, "role 'nobody' is not defined; known roles: admin, coder, debugger, ops, reviewer")
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
	d := decide(call("coder", "ctx_read")) with data.harness.schema_version as 2
	codes(d) == ["invalid_input"]
	contains(d.reasons[0].message, "schema_version 2")
}
