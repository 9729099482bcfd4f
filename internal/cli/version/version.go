// Package version implements `muster version`.
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

// Version is the release, set at build time with
// -ldflags "-X github.com/muster-dev/muster/internal/cli/version.Version=v0.1.0";
// a build without it reports the module version Go recorded.
var Version = ""

// Info is what version prints.
type Info struct {
	Client     ClientInfo `json:"client"`
	Kubernetes string     `json:"kubernetes,omitempty"`
}

// ClientInfo describes this binary.
type ClientInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Options are version's flags.
type Options struct {
	ClientOnly bool
	Output     string
	factory    cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the version command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, factory: f}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print muster's version and the cluster's Kubernetes version",
		Args:  cobra.NoArgs,
		RunE:  cmdutil.RunE(func([]string) error { return nil }, o.Validate, o.Run),
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "only muster's own version: do not contact the cluster")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "yaml or json")
	return cmd
}

// Validate checks -o.
func (o *Options) Validate() error {
	if o.Output != "" && o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("-o %s: yaml or json", o.Output)
	}
	return nil
}

// Run prints the versions. An unreachable cluster is reported after the
// client's version, which is printed anyway.
func (o *Options) Run(ctx context.Context) error {
	info := Info{Client: Client()}
	var serverErr error
	if !o.ClientOnly {
		serverErr = func() error {
			cs, err := o.factory.KubeClient()
			if err != nil {
				return err
			}
			v, err := cs.Discovery().ServerVersion()
			if err != nil {
				return err
			}
			info.Kubernetes = v.GitVersion
			return nil
		}()
	}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(o.Out, string(b))
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		fmt.Fprint(o.Out, string(b))
	default:
		fmt.Fprintf(o.Out, "Client Version: %s (%s, %s)\n", info.Client.Version, info.Client.GoVersion, info.Client.Platform)
		if info.Kubernetes != "" {
			fmt.Fprintf(o.Out, "Kubernetes Version: %s\n", info.Kubernetes)
		}
	}
	if serverErr != nil {
		return fmt.Errorf("reading the cluster's version: %w", serverErr)
	}
	return nil
}

// Client is this binary's version.
func Client() ClientInfo {
	v := Version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	return ClientInfo{Version: v, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}
