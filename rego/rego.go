// Package harnessrego holds the harness's Rego sources, embedded: the
// decision policy (package harness, entry point data.harness.decision) and
// its tests (package harness.tests). It has no logic of its own; the policy
// package evaluates these modules and the compiler writes them into bundles.
package harnessrego

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.rego
var files embed.FS

// File is one Rego source.
type File struct {
	Name   string
	Source []byte
}

// Policy returns the policy modules, without tests, sorted by name.
func Policy() []File { return load(func(n string) bool { return !strings.HasSuffix(n, "_test.rego") }) }

// Tests returns the *_test.rego modules, sorted by name.
func Tests() []File { return load(func(n string) bool { return strings.HasSuffix(n, "_test.rego") }) }

func load(keep func(string) bool) []File {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var out []File
	for _, e := range entries {
		if !keep(e.Name()) {
			continue
		}
		src, err := fs.ReadFile(files, e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, File{Name: e.Name(), Source: src})
	}
	return out
}
