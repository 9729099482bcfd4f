package objects

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestJAXEnv(t *testing.T) {
	for _, sizes := range [][2]int32{{1, 0}, {1, 3}, {2, 2}} {
		job := testutil.MakeJob("jx", "ns").Runtime(musterv1.Runtime{JAX: &musterv1.JAXRuntime{Port: 1234}}).
			Role("head", sizes[0]).Role("worker", sizes[1]).Obj()
		total := sizes[0] + sizes[1]
		id := int32(0)
		for ri, role := range []string{"head", "worker"} {
			for i := range sizes[ri] {
				pod := podOf(t, job, role, i)
				checkEnv(t, pod, map[string]string{
					"JAX_COORDINATOR_ADDRESS": "jx-head-0.jx:1234",
					"JAX_NUM_PROCESSES":       strconv.Itoa(int(total)),
					"JAX_PROCESS_ID":          strconv.Itoa(int(id)),
				})
				var want []string
				if id != 0 {
					want = []string{"jx-head-0.jx"}
				}
				if diff := cmp.Diff(want, waitedFor(pod)); diff != "" {
					t.Errorf("%s waits for (-want +got):\n%s", pod.Name, diff)
				}
				id++
			}
		}
	}
}
