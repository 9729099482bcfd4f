// Command vc-controller-manager is Volcano's controller manager with only
// the controllers a cluster needs for PodGroups that another program
// creates: the queue controller (a Queue must be Open before the scheduler
// admits anything to it) and the PodGroup controller.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/controller-manager/app"
	"volcano.sh/volcano/cmd/controller-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"
	_ "volcano.sh/volcano/pkg/controllers/podgroup"
	_ "volcano.sh/volcano/pkg/controllers/queue"
	vcutil "volcano.sh/volcano/pkg/util"
	"volcano.sh/volcano/pkg/version"
)

func main() {
	klog.InitFlags(nil)
	var known []string
	framework.ForeachController(func(c framework.Controller) { known = append(known, c.Name()) })
	opts := options.NewServerOption()
	fs := pflag.CommandLine
	opts.AddFlags(fs, known)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	vcutil.LeaderElectionDefault(&opts.LeaderElection)
	opts.LeaderElection.ResourceName = "vc-controller-manager"
	componentbaseoptions.BindLeaderElectionFlags(&opts.LeaderElection, fs)
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
