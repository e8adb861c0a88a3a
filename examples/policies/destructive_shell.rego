# METADATA
# description: |
#   Deny destructive shell commands: a recursive rm of anything outside the
#   repository (absolute paths, ~, ..), force pushes, and downloads piped
#   into a shell.
package harness.custom.destructive_shell

# The command of a shell call (shell tools come from the configuration).
command := input.arguments.command if {
	data.harness.config.shell_tools[input.tool]
	is_string(input.arguments.command)
}

# Each `rm` of the command line with its flags and its targets.
rm_calls contains [flags, targets] if {
	some m in regex.find_all_string_submatch_n(`(?:^|[;&|(]\s*|\s)rm\s+((?:-[A-Za-z-]+\s+)*)([^;&|)]*)`, command, -1)
	flags := m[1]
	targets := [t | some t in split(trim_space(m[2]), " "); t != ""]
}

recursive(flags) if regex.match(`(^|\s)(-[A-Za-z]*[rR][A-Za-z]*|--recursive)(\s|$)`, flags)

outside(target) if startswith(target, "/")

outside(target) if startswith(target, "~")

outside(target) if startswith(target, "$HOME")

outside(target) if {
	some part in split(target, "/")
	part == ".."
}

deny contains msg if {
	some [flags, targets] in rm_calls
	recursive(flags)
	some target in targets
	outside(target)
	msg := sprintf("refusing `rm %s%s`: it deletes outside the repository", [flags, target])
}

deny contains msg if {
	regex.match(`(^|[;&|]\s*|\s)git\s+push\b[^;&|]*(\s(--force|-f)(\s|$)|\s\+\S)`, command)
	msg := "refusing a force push: push without --force, or ask a person"
}

deny contains msg if {
	regex.match(`\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b`, command)
	msg := "refusing to pipe a download into a shell: download, read, then run"
}
