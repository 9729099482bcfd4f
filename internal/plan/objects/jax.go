package objects

import (
	"cmp"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// jaxWiring sets what jax.distributed.initialize() reads: process ids go
// role by role in spec order, each by index, and process 0 (task 0 of the
// first role) runs the coordinator. The others wait for its name.
func jaxWiring(t taskRef, j *musterv1.JAXRuntime) wiring {
	var count, id int32
	for i := range t.job.Spec.Roles {
		r := &t.job.Spec.Roles[i]
		if r.Name == t.role.Name {
			id = count + t.index
		}
		count += topology.Replicas(r)
	}
	first := t.job.Spec.Roles[0].Name
	coordinator := PodDNSName(t.job, first, 0)
	port := cmp.Or(j.Port, musterv1.DefaultJAXPort)
	w := wiring{env: []corev1.EnvVar{
		{Name: "JAX_COORDINATOR_ADDRESS", Value: coordinator + ":" + strconv.Itoa(int(port))},
		{Name: "JAX_NUM_PROCESSES", Value: strconv.Itoa(int(count))},
		{Name: "JAX_PROCESS_ID", Value: strconv.Itoa(int(id))},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
	}}
	if id != 0 {
		w.waitFor = []string{coordinator}
	}
	return w
}
