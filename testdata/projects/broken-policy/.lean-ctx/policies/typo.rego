package harness.custom.typo

deny contains msg if {
	input.tool == "ctx_shell"
	msg := sprintf("no shell: %s", [input.arguments.comand]
}
