package objects

import (
	"cmp"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// pytorchWiring sets torch.distributed's variables: torchrun's PET_*
// settings in the elastic roles, MASTER_* in the static world.
func pytorchWiring(t taskRef, pt *musterv1.PyTorchRuntime) wiring {
	if pt.Elastic != nil && topology.IsElastic(t.job, t.role.Name) {
		return wiring{env: elasticEnv(t, pt.Elastic)}
	}
	return wiring{env: staticPyTorchEnv(t, pt)}
}

// staticRanks orders the roles of a static world: the master role first,
// then the others in spec order. The elastic role, if any, is not part of it.
func staticRanks(job *musterv1.TrainingJob) []musterv1.Role {
	master := topology.MasterRole(job)
	var out []musterv1.Role
	for _, r := range job.Spec.Roles {
		switch {
		case topology.IsElastic(job, r.Name):
		case r.Name == master:
			out = append([]musterv1.Role{r}, out...)
		default:
			out = append(out, r)
		}
	}
	return out
}

func staticPyTorchEnv(t taskRef, pt *musterv1.PyTorchRuntime) []corev1.EnvVar {
	ranks := staticRanks(t.job)
	var world, rank int32
	for _, r := range ranks {
		if r.Name == t.role.Name {
			rank = world + t.index
		}
		world += topology.Replicas(&r)
	}
	master := topology.MasterRole(t.job)
	addr := PodDNSName(t.job, master, 0)
	if rank == 0 {
		// Rank 0 hosts the store itself; it need not wait for its own DNS
		// record to exist.
		addr = "localhost"
	}
	port := cmp.Or(pt.Port, musterv1.DefaultPyTorchPort)
	return []corev1.EnvVar{
		{Name: "MASTER_ADDR", Value: addr},
		{Name: "MASTER_PORT", Value: strconv.Itoa(int(port))},
		{Name: "WORLD_SIZE", Value: strconv.Itoa(int(world))},
		{Name: "RANK", Value: strconv.Itoa(int(rank))},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
	}
}

// elasticEnv configures torchrun through its PET_* variables, so the user's
// command stays a plain `torchrun train.py`. A variable the template sets
// itself wins.
func elasticEnv(t taskRef, e *musterv1.ElasticPolicy) []corev1.EnvVar {
	// One world spans every elastic role: its bounds are theirs, summed.
	var minN, maxN int32
	for _, name := range topology.ElasticRoles(t.job) {
		if r := topology.Find(t.job, name); r != nil {
			minN += topology.MinReplicas(t.job, r)
			maxN += topology.MaxReplicas(t.job, r)
		}
	}
	restarts := int32(3)
	if e.MaxRestarts != nil {
		restarts = *e.MaxRestarts
	}
	nproc := e.NProcPerNode
	if nproc == "" {
		nproc = "1"
	}
	backend := string(e.Rendezvous.Backend)
	if backend == "" {
		backend = "c10d"
	}
	endpoint, client := RendezvousEndpoint(t.job, e, t.role.Name, t.index)
	// Unset only where the API server's defaults never ran (unit tests).
	lastCall := cmp.Or(e.Rendezvous.LastCallTimeoutSeconds, 5)
	join := cmp.Or(e.Rendezvous.JoinTimeoutSeconds, 600)
	conf := fmt.Sprintf("last_call_timeout=%d,join_timeout=%d", lastCall, join)
	if client && backend == "c10d" {
		conf += ",is_host=false"
	}
	return []corev1.EnvVar{
		{Name: "PET_NNODES", Value: fmt.Sprintf("%d:%d", minN, maxN)},
		{Name: "PET_NPROC_PER_NODE", Value: nproc},
		{Name: "PET_RDZV_BACKEND", Value: backend},
		{Name: "PET_RDZV_ENDPOINT", Value: endpoint},
		{Name: "PET_RDZV_ID", Value: string(t.job.UID)},
		{Name: "PET_RDZV_CONF", Value: conf},
		{Name: "PET_MAX_RESTARTS", Value: strconv.Itoa(int(restarts))},
		// torch 1.13 checks its workers every 5 s by default; a failure
		// should not wait that long to be noticed.
		{Name: "PET_MONITOR_INTERVAL", Value: "1"},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
	}
}
