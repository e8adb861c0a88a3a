package roles

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
)

//go:embed builtin/*.toml
var builtinFS embed.FS

// BuiltinNames are the roles every installation has, in the seeds' order.
var BuiltinNames = []string{"coder", "reviewer", "debugger", "ops", "admin"}

// DefaultRole is the role used when nothing else names one.
const DefaultRole = "coder"

// builtinPrefix marks the File of a built-in role, which lives in the binary.
const builtinPrefix = "builtin:"

// builtinDefs parses the embedded role files. They are part of the program,
// so an error here is a bug, reported like any other.
func builtinDefs() (map[string]*Def, ErrorList) {
	defs := map[string]*Def{}
	var errs ErrorList
	for _, name := range BuiltinNames {
		file := path.Join("builtin", name+".toml")
		src, err := fs.ReadFile(builtinFS, file)
		if err != nil {
			errs = append(errs, &Error{File: builtinPrefix + name + ".toml", Msg: fmt.Sprintf("missing built-in role: %v", err)})
			continue
		}
		d, e := Parse(builtinPrefix+name+".toml", src, SourceBuiltin)
		errs = append(errs, e...)
		defs[name] = d
	}
	return defs, errs
}

// BuiltinSource returns the TOML text of a built-in role, for `roles show`
// and for users who want a starting point.
func BuiltinSource(name string) ([]byte, error) {
	return fs.ReadFile(builtinFS, path.Join("builtin", name+".toml"))
}
