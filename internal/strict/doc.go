// Package strict holds what the harness's strict TOML readers (role files,
// harness.toml) share: errors that read like a compiler's (file, line,
// column, key, a suggestion for typos), collected and sorted; how much of
// a file an error may quote (Quote, Cut and Clip: the offending token, cut
// at MaxQuote bytes); and the positions of keys in a TOML source, which
// BurntSushi/toml keeps private.
package strict
