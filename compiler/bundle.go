package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Module is one Rego source file of a bundle.
type Module struct {
	// Name is the module's path inside a bundle: "harness.rego",
	// "policies/project/no_force_push.rego".
	Name string
	// File is where the module was read from, for messages; "" for the
	// harness's own modules.
	File   string
	Source []byte
}

// Location is the module's file for messages: File, else Name.
func (m Module) Location() string {
	if m.File != "" {
		return m.File
	}
	return m.Name
}

// Manifest is the .manifest file of an OPA bundle.
type Manifest struct {
	Revision    string   `json:"revision"`
	Roots       []string `json:"roots"`
	RegoVersion int      `json:"rego_version"`
}

// Bundle is everything an OPA bundle directory holds, as bytes.
type Bundle struct {
	Data     []byte // data.json: {"harness": <document>}
	Manifest []byte // .manifest
	Modules  []Module
	// Revision is the manifest's revision: a hash of the contents.
	Revision string
}

// NewBundle lays out doc and modules as an OPA bundle. The revision is a
// hash of the contents, so an unchanged policy keeps its revision.
func NewBundle(doc *Document, modules []Module) (*Bundle, error) {
	data, err := marshal(map[string]*Document{Root: doc})
	if err != nil {
		return nil, err
	}
	mods := slices.Clone(modules)
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	h.Write(data)
	for _, m := range mods {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", m.Name, len(m.Source))
		h.Write(m.Source)
	}
	rev := hex.EncodeToString(h.Sum(nil))[:16]
	man, err := json.MarshalIndent(Manifest{
		Revision:    rev,
		Roots:       []string{Root},
		RegoVersion: 1,
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return &Bundle{Data: data, Manifest: append(man, '\n'), Modules: mods, Revision: rev}, nil
}

// Write writes the bundle into dir (created if needed): data.json,
// .manifest and the modules. Files are written to temporary names and
// renamed, so a reader never sees half a file.
func (b *Bundle) Write(dir string) error { return b.WriteProgress(dir, nil) }

// WriteProgress is Write, telling progress (if set) of each file written:
// how many of how many.
func (b *Bundle) WriteProgress(dir string, progress func(done, total int)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{"data.json": b.Data, ".manifest": b.Manifest}
	for _, m := range b.Modules {
		if !filepath.IsLocal(m.Name) || filepath.Clean(m.Name) != m.Name || !strings.HasSuffix(m.Name, ".rego") {
			return fmt.Errorf("module name %q: want a relative *.rego path inside the bundle", m.Name)
		}
		files[m.Name] = m.Source
	}
	for i, name := range slices.Sorted(maps.Keys(files)) {
		if progress != nil {
			progress(i, len(files))
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(path, files[name]); err != nil {
			return err
		}
	}
	if progress != nil {
		progress(len(files), len(files))
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
