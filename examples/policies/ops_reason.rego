# METADATA
# description: |
#   The ops role must say why: its shell calls need a "reason" argument of
#   at least ten characters, which then stands in the decision log.
package harness.custom.ops_reason

deny contains msg if {
	input.role == "ops"
	data.harness.config.shell_tools[input.tool]
	not has_reason
	msg := sprintf("ops: %s needs a \"reason\" argument (at least 10 characters) saying why", [input.tool])
}

has_reason if {
	r := input.arguments.reason
	is_string(r)
	count(trim_space(r)) >= 10
}
