// Command golangci-lint-kal is golangci-lint with kube-api-linter (KAL)
// compiled in as the module plugin "kubeapilinter". It is what
// `golangci-lint custom` would generate, kept as an ordinary module so it
// builds from the Go module proxy alone and its versions are pinned by this
// folder's go.mod and go.sum. `make lint-api` builds and runs it with
// .golangci-kal.yml.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/golangci/golangci-lint/v2/pkg/commands"
	"github.com/golangci/golangci-lint/v2/pkg/exitcodes"

	// Registers the "kubeapilinter" module plugin with golangci-lint.
	_ "sigs.k8s.io/kube-api-linter"
)

func main() {
	if err := commands.Execute(buildInfo()); err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "golangci-lint-kal: %v\n", err)
		os.Exit(exitcodes.Failure)
	}
}

// buildInfo reports the versions of golangci-lint and KAL this binary was
// built from, for `golangci-lint-kal version`.
func buildInfo() commands.BuildInfo {
	info := commands.BuildInfo{Version: "unknown", Commit: "unknown", Date: "unknown", GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	golangci, kal := "unknown", "unknown"
	for _, dep := range bi.Deps {
		switch dep.Path {
		case "github.com/golangci/golangci-lint/v2":
			golangci = dep.Version
		case "sigs.k8s.io/kube-api-linter":
			kal = dep.Version
		}
	}
	info.Version = golangci + ", kube-api-linter " + kal
	return info
}
