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

in_project(args) := object.union(edit(args), {"project": "/home/dev/app"})

test_absolute_paths_under_the_project if {
	every p in ["/home/dev/app/src/main.go", "/home/dev/app/a/../b.go"] {
		count(edit_in_project.deny) == 0 with input as in_project({"file_path": p})
	}
	every p in ["/home/dev/app/../other/x", "/home/dev/appendix/x", "/home/dev/app", "/etc/passwd", "../x"] {
		count(edit_in_project.deny) == 1 with input as in_project({"file_path": p})
	}
}

test_no_project_no_absolute_paths if {
	count(edit_in_project.deny) == 1 with input as object.union(edit({"file_path": "/home/dev/app/x"}), {"project": ""})
}

test_other_tools_untouched if {
	count(edit_in_project.deny) == 0 with input as object.union(edit({"path": "/etc/passwd"}), {"tool": "ctx_read"})
}
