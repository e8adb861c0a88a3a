package harness.custom.no_ls_test

import data.harness.custom.no_ls

test_ls_denied if {
	count(no_ls.deny) == 1 with input as {"tool": "ctx_shell", "arguments": {"command": "ls"}}
}

# Wrong on purpose: `ls -la` is not "ls", so nothing is denied.
test_ls_la_denied if {
	count(no_ls.deny) == 1 with input as {"tool": "ctx_shell", "arguments": {"command": "ls -la"}}
}
