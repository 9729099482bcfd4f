// Package version is what a Muster binary knows of its own build: the
// release it was cut as and the commit it was built from. Both are set at
// link time by the release and image builds (tools/release, tools/image):
//
//	-ldflags "-X github.com/muster-dev/muster/internal/version.Version=v0.2.0
//	          -X github.com/muster-dev/muster/internal/version.Commit=<sha>"
//
// A binary built without them (go build, go run) falls back to what Go
// recorded: the module version and the VCS revision, or "(devel)".
package version

import (
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/semver"
)

// Version and Commit are set at link time; see the package comment.
var (
	Version = ""
	Commit  = ""
)

// Info is one binary's build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get is this binary's build.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if info.Version == "" {
		info.Version = "(devel)"
		if ok && bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
	}
	if info.Commit == "" && ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				info.Commit = s.Value
			}
		}
	}
	return info
}

// MinorSkew says whether two versions differ in their major or minor
// release (v0.2.1 against v0.3.0), the skew `muster version` warns about.
// A version that is not semantic ("(devel)", a pseudo-version of a local
// build is semantic) never counts as skewed: nothing can be said of it.
func MinorSkew(a, b string) bool {
	if !semver.IsValid(a) || !semver.IsValid(b) {
		return false
	}
	return semver.MajorMinor(a) != semver.MajorMinor(b)
}

// Short is a commit cut to the 12 characters git shows.
func Short(commit string) string {
	if len(commit) > 12 && !strings.ContainsAny(commit, " ") {
		return commit[:12]
	}
	return commit
}
