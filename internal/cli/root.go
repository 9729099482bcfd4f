// Package cli builds the muster command the kubectl way: kubectl's
// connection flags, IOStreams, cli-runtime printers, one package per verb
// (internal/cli/<verb>) with an options struct that is completed,
// validated and run.
package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/create"
	"github.com/muster-dev/muster/internal/cli/debug"
	"github.com/muster-dev/muster/internal/cli/delete"
	"github.com/muster-dev/muster/internal/cli/describe"
	"github.com/muster-dev/muster/internal/cli/events"
	"github.com/muster-dev/muster/internal/cli/get"
	"github.com/muster-dev/muster/internal/cli/importcmd"
	"github.com/muster-dev/muster/internal/cli/logs"
	"github.com/muster-dev/muster/internal/cli/restart"
	runcmd "github.com/muster-dev/muster/internal/cli/run"
	"github.com/muster-dev/muster/internal/cli/scale"
	"github.com/muster-dev/muster/internal/cli/stop"
	"github.com/muster-dev/muster/internal/cli/suspend"
	"github.com/muster-dev/muster/internal/cli/tensorboard"
	"github.com/muster-dev/muster/internal/cli/top"
	"github.com/muster-dev/muster/internal/cli/version"
	"github.com/muster-dev/muster/internal/cli/wait"
)

// Options build the root command.
type Options struct {
	// ConfigFlags are kubectl's connection flags: --kubeconfig,
	// --context, --namespace, --as, --server, ...
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// Factory, when set, replaces the clients ConfigFlags would make.
	Factory cmdutil.Factory
	// Name is what the user typed: "kubectl muster" when run as the
	// kubectl plugin kubectl-muster.
	Name string
}

// NewDefaultCommand is the command main runs, on the process's streams.
func NewDefaultCommand() *cobra.Command {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	return NewRootCommand(Options{
		ConfigFlags: genericclioptions.NewConfigFlags(true).WithWarningPrinter(streams),
		IOStreams:   streams,
		Name:        commandName(os.Args[0]),
	})
}

// commandName is "kubectl muster" when kubectl runs the binary as its
// plugin, so that help and completion show what the user types.
func commandName(arg0 string) string {
	if strings.HasPrefix(filepath.Base(arg0), "kubectl-") {
		return "kubectl " + strings.TrimPrefix(filepath.Base(arg0), "kubectl-")
	}
	return "muster"
}

// NewRootCommand builds the muster command and its verbs.
func NewRootCommand(o Options) *cobra.Command {
	if o.Name == "" {
		o.Name = "muster"
	}
	root := &cobra.Command{
		Use:   "muster",
		Short: "Run elastic, fault-tolerant distributed training jobs on Kubernetes",
		Long: "muster creates, inspects and drives Muster TrainingJobs. It takes kubectl's connection flags\n" +
			"and, installed on PATH as kubectl-muster, is also `kubectl muster`.",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: o.Name},
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	if o.ConfigFlags == nil {
		o.ConfigFlags = genericclioptions.NewConfigFlags(true)
	}
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	f := o.Factory
	if f == nil {
		f = cmdutil.NewFactory(o.ConfigFlags, clock.RealClock{})
	}
	_ = root.RegisterFlagCompletionFunc("namespace", namespaces(f))
	_ = root.RegisterFlagCompletionFunc("context", contexts(f))

	root.AddGroup(&cobra.Group{ID: "basic", Title: "Jobs:"}, &cobra.Group{ID: "drive", Title: "Driving a job:"},
		&cobra.Group{ID: "debug", Title: "Looking into a job:"})
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("basic", get.NewCmd(f, o.IOStreams), describe.NewCmd(f, o.IOStreams), create.NewCmd(f, o.IOStreams), importcmd.NewCmd(f, o.IOStreams),
		delete.NewCmd(f, o.IOStreams))
	add("drive", scale.NewCmd(f, o.IOStreams), suspend.NewSuspendCmd(f, o.IOStreams), suspend.NewResumeCmd(f, o.IOStreams),
		stop.NewCmd(f, o.IOStreams), restart.NewCmd(f, o.IOStreams), runcmd.NewCmd(f, o.IOStreams), wait.NewCmd(f, o.IOStreams))
	add("debug", logs.NewCmd(f, o.IOStreams), events.NewCmd(f, o.IOStreams), top.NewCmd(f, o.IOStreams),
		debug.NewCmd(f, o.IOStreams), tensorboard.NewCmd(f, o.IOStreams))
	root.AddCommand(version.NewCmd(f, o.IOStreams))
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	return root
}
