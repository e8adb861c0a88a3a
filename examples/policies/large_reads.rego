# METADATA
# description: |
#   Warn (not deny) on large reads: a range of more than 2000 lines, or a
#   file that is usually big and of little use whole (lock files, minified
#   code, logs, CSV).
package harness.custom.large_reads

read_tools := {"ctx_read", "ctx_multi_read", "ctx_smart_read"}

max_lines := 2000

large_files := ["**.lock", "**package-lock.json", "**.min.js", "**.log", "**.csv"]

warn contains msg if {
	input.tool in read_tools
	n := input.arguments.lines
	is_number(n)
	n > max_lines
	msg := sprintf("large read: %d lines (more than %d); read a range instead", [n, max_lines])
}

warn contains msg if {
	input.tool in read_tools
	p := input.arguments.path
	is_string(p)
	some pattern in large_files
	glob.match(pattern, ["/"], p)
	msg := sprintf("large read: %s is usually big and of little use read whole", [p])
}
