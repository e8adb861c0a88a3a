package app

import (
	"runtime"
	"runtime/debug"
)

// Build is what a binary knows of how it was built: `harness version`.
type Build struct {
	// Version is the main module's version: the one `go install
	// …@v1.2.0` built, or the pseudo-version Go stamps from the
	// repository a binary is built in; Version (the constant) when the
	// build knows none ("(devel)").
	Version string `json:"version"`
	// Module is the main module's path.
	Module string `json:"module,omitempty"`
	// Revision, Time and Modified are the commit the binary was built
	// from, its time, and whether the work tree had changes (Go's VCS
	// stamp; absent without one, as in builds with -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// GoVersion is the Go toolchain's, Platform GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// OPAVersion is the version of the embedded Open Policy Agent.
	OPAVersion string `json:"opa_version,omitempty"`
}

// CurrentBuild is this binary's Build.
func CurrentBuild() Build { return BuildOf(debug.ReadBuildInfo()) }

// BuildOf reads a Build from the build information Go embeds in a binary
// (see debug.ReadBuildInfo; ok false when it has none).
func BuildOf(info *debug.BuildInfo, ok bool) Build {
	b := Build{Version: Version, GoVersion: runtime.Version()}
	goos, goarch := runtime.GOOS, runtime.GOARCH
	if ok && info != nil {
		b.Module, b.GoVersion = info.Main.Path, info.GoVersion
		if v := info.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		for _, d := range info.Deps {
			if d.Path == "github.com/open-policy-agent/opa" {
				b.OPAVersion = d.Version
			}
		}
	}
	b.Platform = goos + "/" + goarch
	return b
}
