package harness.custom.large_reads_test

import data.harness.custom.large_reads

read(args) := {"role": "reviewer", "tool": "ctx_read", "arguments": args, "budget": {"tokens": 0, "shell": 0, "cost_micros": 0}}

test_many_lines if {
	count(large_reads.warn) == 1 with input as read({"path": "main.go", "lines": 5000})
	count(large_reads.warn) == 0 with input as read({"path": "main.go", "lines": 200})
}

test_big_files if {
	every p in ["Cargo.lock", "web/package-lock.json", "dist/app.min.js", "logs/build.log", "data/x.csv"] {
		count(large_reads.warn) == 1 with input as read({"path": p})
	}
	count(large_reads.warn) == 0 with input as read({"path": "src/lock.go"})
}

# A warning, not a deny: the read goes ahead, with the warning attached.
test_decision_warns if {
	d := data.harness.decision with input as read({"path": "yarn.lock"})
	d.decision == "warn"
	d.warnings[0].policy == "harness.custom.large_reads"
}
