# METADATA
# description: A reviewer agent may only switch back to coder.
package harness.custom.reviewer_to_coder

switch_deny contains msg if {
	input.by == "agent"
	input.from == "reviewer"
	input.to != "coder"
	msg := sprintf("a reviewer may only switch to coder, not to %s", [input.to])
}
