package importer

import (
	"fmt"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// torchReplicas converts the replica specs of a Kubeflow-style PyTorch job
// into roles, master first, the way Kubeflow's PyTorch operators run them:
// MASTER_ADDR is the master's task 0, RANK counts from it, and its end
// decides the job's.
func torchReplicas(s *source, f replicaJob) ([]musterv1.Role, error) {
	f.kind, f.types = "PyTorch job", []string{"Master", "Worker"}
	roles, err := kfReplicas(s, f)
	if err != nil {
		return nil, err
	}
	if f.workerWaits && len(roles) == 2 {
		roles[1].DependsOn = []musterv1.Dependency{{Role: "master", When: musterv1.DependencyRunning}}
	}
	return roles, nil
}

// torchStatic is the runtime of a PyTorch job without elastic training:
// the master's task 0 serves MASTER_ADDR at the master's port.
func torchStatic(roles []musterv1.Role) *musterv1.Runtime {
	rt := &musterv1.PyTorchRuntime{}
	if roles[0].Name == "master" {
		if port := containerPort(roles[0].Template, "pytorchjob-port"); port != nil && *port != musterv1.DefaultPyTorchPort {
			rt.Port = *port
		}
	}
	return &musterv1.Runtime{PyTorch: rt}
}

// rendezvous is an elastic job's rendezvous as the source gives it.
type rendezvous struct {
	backend  string
	endpoint string // host:port of a store of the user's
	port     *int32 // of the store, without a host
}

// torchRendezvous is Muster's rendezvous for the source's. An endpoint is
// the user's own store (External); without one the job gets its own store
// pod, which survives the loss of any worker.
func torchRendezvous(r rendezvous) (musterv1.Rendezvous, error) {
	var out musterv1.Rendezvous
	switch musterv1.RendezvousBackend(r.backend) {
	case "", "c10d":
	case "etcd", "etcd-v2":
		out.Backend = musterv1.RendezvousBackend(r.backend)
		if r.endpoint == "" {
			return out, fmt.Errorf("the %s rendezvous needs an endpoint: the etcd it meets at", r.backend)
		}
	default:
		return out, fmt.Errorf("rendezvous backend %q: c10d, etcd or etcd-v2", r.backend)
	}
	if r.endpoint != "" {
		out.Store, out.Endpoint = musterv1.StoreExternal, r.endpoint
	} else if r.port != nil {
		out.Port = *r.port
	}
	return out, nil
}

// elasticWorld makes the worker role scalable between its bounds, and a
// master, which torchrun runs as one more node of the same world, a
// scalable role of exactly one task. The master still decides the job's
// end, as it did.
func elasticWorld(s *source, roles []musterv1.Role, minR, maxR *int32, bounds path) musterv1.Scaling {
	var sc musterv1.Scaling
	var total int32
	for i := range roles {
		r := &roles[i]
		n := deref(r.Replicas)
		role := musterv1.ScalingRole{Name: r.Name, MinReplicas: ptr(n), MaxReplicas: max(n, 1)}
		if r.Name == "worker" {
			if minR != nil {
				role.MinReplicas = ptr(*minR)
			}
			if maxR != nil {
				role.MaxReplicas = *maxR
			}
			if clamped := min(max(n, deref(role.MinReplicas)), role.MaxReplicas); clamped != n {
				s.mention(bounds, fmt.Sprintf("the workers' replicas, %d, lie outside these bounds: the job starts with %d", n, clamped))
				n = clamped
			}
		} else {
			r.Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(int32(1)), MinFailed: ptr(int32(1))}
		}
		total += n
		r.Replicas = nil
		sc.Roles = append(sc.Roles, role)
	}
	if len(roles) > 1 {
		for i := range roles {
			if roles[i].Name == "worker" {
				roles[i].Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(int32(-1))}
			}
		}
	}
	sc.Replicas = ptr(total)
	return sc
}
