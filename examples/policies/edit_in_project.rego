# METADATA
# description: |
#   Edits stay inside the project: an edit tool may only name paths that
#   do not climb out with "..", relative ones or, when the harness knows
#   the project (input.project), absolute ones under it (Claude Code names
#   every file by its absolute path).
package harness.custom.edit_in_project

edit_tools := {"ctx_edit", "ctx_write", "ctx_patch"}

path_keys := ["path", "file", "file_path", "target"]

deny contains msg if {
	input.tool in edit_tools
	some key in path_keys
	p := input.arguments[key]
	is_string(p)
	not inside(p)
	msg := sprintf("%s may only edit files inside the project; %s %q is outside", [input.tool, key, p])
}

inside(p) if {
	input.project != ""
	startswith(p, concat("", [input.project, "/"]))
	not climbs(substring(p, count(input.project) + 1, -1))
}

inside(p) if {
	p != ""
	not startswith(p, "/")
	not startswith(p, "~")
	not startswith(p, "$")
	not regex.match(`^[A-Za-z]:[\\/]`, p)
	not climbs(p)
}

# climbs is true when some prefix of the path has more ".." than names:
# "a/../b" stays inside, "a/../../b" does not.
climbs(p) if {
	parts := split(replace(p, "\\", "/"), "/")
	some i, _ in parts
	prefix := array.slice(parts, 0, i + 1)
	count([x | some x in prefix; x == ".."]) > count([x | some x in prefix; not x in {"..", ".", ""}])
}
