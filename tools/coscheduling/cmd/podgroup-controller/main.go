// Command podgroup-controller runs scheduler-plugins' PodGroup controller
// alone: it keeps the status of scheduling.x-k8s.io PodGroups (phase,
// scheduled, running, succeeded and failed counts) up to date, which the
// Coscheduling plugin itself does not. The controller binary of
// scheduler-plugins also runs an ElasticQuota controller, whose CRD this
// cluster does not have.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedulingv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/scheduler-plugins/pkg/controllers"
)

func main() {
	probe := flag.String("health-probe-bind-address", "127.0.0.1:8081", "address of /healthz and /readyz")
	workers := flag.Int("workers", 2, "PodGroups reconciled at once")
	klog.InitFlags(nil)
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())
	log := ctrl.Log.WithName("podgroup-controller")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := schedulingv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: *probe,
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	r := &controllers.PodGroupReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Workers: *workers}
	if err := r.SetupWithManager(mgr); err != nil {
		log.Error(err, "setting up the PodGroup controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the readiness check")
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running")
		os.Exit(1)
	}
}
