package importer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// kfRunPolicy is Kubeflow's common RunPolicy, which KubeDL's and
// torchelastic's jobs share, read but not yet placed in a spec: the gang
// backend depends on the pod templates.
type kfRunPolicy struct {
	run          musterv1.RunPolicy
	backoffLimit *int32
	minAvailable *int32
	queue        string
	priority     string
	timeout      *int32
	p            path // the RunPolicy, for the report
}

// readKFRunPolicy reads the RunPolicy at p. Unset fields take the
// defaults of the source's PyTorch jobs: finished pods are kept
// (cleanPodPolicy None) and restarts are not limited.
func readKFRunPolicy(s *source, p path) (kfRunPolicy, error) {
	out := kfRunPolicy{p: p}
	out.run.CleanPodPolicy = musterv1.CleanPodPolicyNone
	if err := cleanPodPolicy(s, p.child("cleanPodPolicy"), &out.run.CleanPodPolicy); err != nil {
		return out, err
	}
	var err error
	if out.run.TTLSecondsAfterFinished, err = s.int32p(p.child("ttlSecondsAfterFinished")); err != nil {
		return out, err
	}
	if d, ok, err := s.integer(p.child("activeDeadlineSeconds")); err != nil {
		return out, err
	} else if ok {
		out.run.ActiveDeadlineSeconds = d
	}
	if out.backoffLimit, err = s.int32p(p.child("backoffLimit")); err != nil {
		return out, err
	}
	if out.backoffLimit == nil {
		out.backoffLimit = ptr(unlimited)
	}
	suspend, err := s.boolean(p.child("suspend"))
	if err != nil {
		return out, err
	}
	if suspend {
		out.run.Execution = musterv1.ExecutionSuspend
	}
	s.drop(p.child("managedBy"), "Muster has no managedBy: the operator always runs its own jobs")
	s.drop(p.child("cronPolicy"), "Muster does not schedule jobs on a timetable: create them from a CronJob")
	sp := p.child("schedulingPolicy")
	if out.minAvailable, err = s.int32p(sp.child("minAvailable")); err != nil {
		return out, err
	}
	out.queue = s.str(sp.child("queue"))
	out.priority = s.str(sp.child("priorityClass"))
	if pc := s.str(sp.child("priorityClassName")); pc != "" {
		out.priority = pc
	}
	s.drop(sp.child("priority"), "a number is not a priority in Muster: name a PriorityClass (schedulingPolicy.priorityClassName)")
	s.drop(sp.child("minResources"), "Muster computes the gang's minimum resources from the pod templates")
	if out.timeout, err = s.int32p(sp.child("scheduleTimeoutSeconds")); err != nil {
		return out, err
	}
	return out, nil
}

// cleanPodPolicy reads a Kubeflow cleanPodPolicy at p into out, which
// keeps its value when p is unset.
func cleanPodPolicy(s *source, p path, out *musterv1.CleanPodPolicy) error {
	c := s.str(p)
	switch cp := musterv1.CleanPodPolicy(c); cp {
	case "":
	case musterv1.CleanPodPolicyAll, musterv1.CleanPodPolicyRunning, musterv1.CleanPodPolicyNone:
		*out = cp
	default:
		return fmt.Errorf("%s: %q: All, Running or None", p, c)
	}
	return nil
}

// gangBackend is the backend the source's pods were scheduled by, from the
// scheduler their templates name. Kubeflow and KubeDL choose the gang
// scheduler in their operator's configuration, as Muster does: with no
// scheduler named, the backend is left to the operator's default.
func gangBackend(roles []musterv1.Role) musterv1.GangBackend {
	for _, r := range roles {
		switch r.Template.Spec.SchedulerName {
		case "volcano":
			return musterv1.GangVolcano
		case "scheduler-plugins-scheduler":
			return musterv1.GangCoscheduling
		}
	}
	return ""
}

// clearScheduler removes the gang scheduler's name from the templates:
// the backend sets it on every pod.
func clearScheduler(roles []musterv1.Role, b musterv1.GangBackend) {
	if b != musterv1.GangVolcano && b != musterv1.GangCoscheduling {
		return
	}
	for i := range roles {
		roles[i].Template.Spec.SchedulerName = ""
	}
}

// scheduling places the run policy's gang settings in spec.scheduling,
// given the backend; what the backend cannot take is reported.
func (k kfRunPolicy) scheduling(s *source, backend musterv1.GangBackend, smallest int32) musterv1.Scheduling {
	sp := k.p.child("schedulingPolicy")
	var out musterv1.Scheduling
	if !s.has(sp) && backend == "" {
		return out
	}
	out.Backend = backend
	out.PriorityClassName = k.priority
	if k.minAvailable != nil && *k.minAvailable > 0 {
		out.MinAvailable = min(*k.minAvailable, smallest)
		if *k.minAvailable > smallest {
			s.note(sp.child("minAvailable"), fmt.Sprintf(
				"%d is more than the job's smallest size, %d: Muster's gang must fit the job at every size it may be scaled to, so it is %d",
				*k.minAvailable, smallest, smallest))
		}
	}
	if k.queue != "" {
		if backend == musterv1.GangVolcano {
			out.VolcanoQueue = k.queue
		} else {
			s.note(sp.child("queue"), "a queue is Volcano's, and the pods name no Volcano scheduler: set spec.scheduling.backend "+
				"Volcano and spec.scheduling.volcanoQueue to keep it, or put the job in a Kueue LocalQueue with the kueue.x-k8s.io/queue-name label")
		}
	}
	if k.timeout != nil {
		if backend == musterv1.GangCoscheduling {
			out.ScheduleTimeoutSeconds = *k.timeout
		} else {
			s.note(sp.child("scheduleTimeoutSeconds"), "only the coscheduling plugin has a schedule timeout, and the pods name no coscheduling scheduler")
		}
	}
	return out
}

// smallestSize is the job's size at its smallest: the fixed roles'
// replicas and each scalable role's minReplicas.
func smallestSize(spec *musterv1.TrainingJobSpec) int32 {
	scalable := map[string]int32{}
	for _, r := range spec.Scaling.Roles {
		scalable[r.Name] = deref(r.MinReplicas)
		if r.MinReplicas == nil {
			scalable[r.Name] = 1
		}
	}
	var n int32
	for _, r := range spec.Roles {
		if m, ok := scalable[r.Name]; ok {
			n += m
		} else if r.Replicas == nil {
			n++
		} else {
			n += *r.Replicas
		}
	}
	return n
}

// replicaRestart is a Kubeflow-style replica restartPolicy.
func replicaRestart(p path, v string, def musterv1.RestartPolicy) (musterv1.RestartPolicy, error) {
	if v == "" {
		return def, nil
	}
	switch rp := musterv1.RestartPolicy(v); rp {
	case musterv1.RestartPolicyAlways, musterv1.RestartPolicyOnFailure, musterv1.RestartPolicyNever, musterv1.RestartPolicyExitCode:
		return rp, nil
	}
	return "", fmt.Errorf("%s: %q: Always, OnFailure, Never or ExitCode", p, v)
}

// containerPort is the port of the named container port in the template,
// if it has one.
func containerPort(t corev1.PodTemplateSpec, name string) *int32 {
	for _, c := range t.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return ptr(p.ContainerPort)
			}
		}
	}
	return nil
}
