package harness.custom.no_ls

deny contains "no ls" if input.arguments.command == "ls"
