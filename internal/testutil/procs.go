package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// PodProcesses are the host processes of a pod on the local cluster's
// process node, found by the pod name and namespace Muster puts in every
// container's environment. Tests and benchmarks kill them to lose a worker
// the way a crashed node would.
func PodProcesses(namespace, pod string) []int {
	want := []string{
		musterv1.EnvPodName + "=" + pod + "\x00",
		musterv1.EnvJobNamespace + "=" + namespace + "\x00",
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !strings.Contains(string(raw), want[0]) || !strings.Contains(string(raw), want[1]) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
