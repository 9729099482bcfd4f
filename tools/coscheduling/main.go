// Command kube-scheduler-coscheduling is kube-scheduler with the
// Coscheduling plugin of sigs.k8s.io/scheduler-plugins compiled in: the
// second scheduler of the local cluster for PodGroups of
// scheduling.x-k8s.io. This module pins the version; tools/devcluster
// builds it once per version into its cache.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// CoschedulingArgs in the scheduler's configuration scheme.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(coscheduling.Name, coscheduling.New))
	os.Exit(cli.Run(cmd))
}
