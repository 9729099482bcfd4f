// Package framework holds what Muster's cluster-backed test tiers
// (test/e2e, test/chaos, test/install, and test/integration for its job
// waits and scheme) share, so that each tier's files keep only what makes
// the tier what it is.
//
// A tier that runs on a local cluster starts it once, in its TestMain,
// through StartCluster, which takes the tier's name (its state dir under
// the cache, and the mark on the cluster's progress lines) and edits to
// the cluster's configuration (fake nodes, gang schedulers, Kueue, no
// operator), and returns the Cluster with its clients and the function
// that tears it down:
//
//	func runSuite(m *testing.M) int {
//		c, stop, err := framework.StartCluster(context.Background(), "e2e", func(cfg *devcluster.Config) {
//			cfg.FakeNodes = 2
//		}, nil)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, "e2e:", err)
//			return 1
//		}
//		defer stop()
//		cluster = c
//		return m.Run()
//	}
//
// Its tests then take a namespace of their own with Cluster.Namespace,
// wait on a TrainingJob with WaitJob and a check such as PhaseIs, on a pod
// with WaitPodPhase or PodGone, and have Cluster.DumpOnFailure log the
// jobs, their pods and the operator's log when they fail. The waits take
// any controller-runtime client or clientset, so a tier without a local
// cluster (envtest) uses them too.
package framework
