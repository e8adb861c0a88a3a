package harness.custom.edit_in_project_test

import data.harness.custom.edit_in_project

edit(args) := {"role": "coder", "tool": "ctx_edit", "arguments": args}

test_inside if {
	every p in ["src/main.go", "./README.md", "a/b/../c.go"] {
		count(edit_in_project.deny) == 0 with input as edit({"path": p})
	}
}

test_outside if {
	every p in ["/etc/passwd", "~/.bashrc", "../other/x", "src/../../x", "a/../b/../../c", "$HOME/.ssh/config", "C:\\Windows\\x", ""] {
		count(edit_in_project.deny) == 1 with input as edit({"path": p})
	}
	count(edit_in_project.deny) == 1 with input as edit({"file_path": "/tmp/x"})
}

test_other_tools_untouched if {
	count(edit_in_project.deny) == 0 with input as object.union(edit({"path": "/etc/passwd"}), {"tool": "ctx_read"})
}
