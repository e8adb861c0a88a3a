package app

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// A build's version comes from its module (go install …@v1.2.0, or the
// version Go stamps from the repository), its commit from the VCS stamp;
// a build that knows neither is Version.
func TestBuildOf(t *testing.T) {
	t.Parallel()
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	opa := &debug.Module{Path: "github.com/open-policy-agent/opa", Version: "v1.22.4"}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want Build
	}{
		{"a released module", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentharness/harness", Version: "v1.2.0"},
			Deps: []*debug.Module{opa}, Settings: settings("GOOS", "linux", "GOARCH", "arm64")}, true,
			Build{Version: "v1.2.0", Module: "github.com/agentharness/harness", GoVersion: "go1.26.0", Platform: "linux/arm64", OPAVersion: "v1.22.4"}},
		{"a clone, stamped by the VCS", &debug.BuildInfo{GoVersion: "go1.26.0",
			Main: debug.Module{Path: "github.com/agentharness/harness", Version: "v0.0.0-20261201120000-0123456789ab+dirty"},
			Settings: settings("vcs", "git", "vcs.revision", "0123456789abcdef", "vcs.time", "2026-12-01T12:00:00Z", "vcs.modified", "true",
				"GOOS", "darwin", "GOARCH", "amd64")}, true,
			Build{Version: "v0.0.0-20261201120000-0123456789ab+dirty", Module: "github.com/agentharness/harness", Revision: "0123456789abcdef",
				Time: "2026-12-01T12:00:00Z", Modified: true, GoVersion: "go1.26.0", Platform: "darwin/amd64"}},
		{"a development build", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentharness/harness", Version: "(devel)"},
			Settings: settings("vcs.revision", "abc", "vcs.modified", "false")}, true,
			Build{Version: Version, Module: "github.com/agentharness/harness", Revision: "abc", GoVersion: "go1.26.0", Platform: runtime.GOOS + "/" + runtime.GOARCH}},
		{"no build information", nil, false,
			Build{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := BuildOf(tt.info, tt.ok); got != tt.want {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if b := CurrentBuild(); b.Version == "" || b.GoVersion == "" {
		t.Errorf("this build: %+v", b)
	}
}
