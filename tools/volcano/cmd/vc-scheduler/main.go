// Command vc-scheduler is Volcano's scheduler with its default actions and
// plugins, built from the module proxy for the local cluster.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	vcutil "volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"

	// The actions and plugins register themselves.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
)

func main() {
	klog.InitFlags(nil)
	opts := options.NewServerOption()
	fs := pflag.CommandLine
	opts.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	vcutil.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = vcutil.GenerateComponentName(opts.SchedulerNames)
	componentbaseoptions.BindLeaderElectionFlags(&opts.LeaderElection, fs)
	opts.RegisterOptions()
	cliflag.InitFlags()
	if opts.PrintVersion {
		version.PrintVersionAndExit()
	}
	if err := opts.CheckOptionOrDie(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer klog.Flush()
	if err := app.Run(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
