// Package gang asks the schedulers that exist to place a job's tasks as a
// gang: all of its minimum at once, or none. Muster never schedules pods
// itself. A Gang is the gang one attempt of a job needs, computed from the
// job alone; a Backend turns it into the scheduler's own objects, ties pods
// to it, and reads back whether the scheduler let the gang in.
//
// An attempt whose pods are made anew gets a gang object of its own, named
// <job>-<attempt>, made before any of them: a job restarted by re-creating
// its pods is placed afresh, never half in an old gang. An attempt whose
// pods all moved into it in place keeps the gang that placed them
// (Placing): they never left their nodes, and the planner moves a gang's
// pods in place all together or not at all.
package gang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Gang is what one attempt of a job asks of its gang scheduler.
type Gang struct {
	Backend musterv1.GangBackend
	// Job and Namespace name the job; Name is the attempt's gang object.
	Job, Namespace, Name string
	Attempt              int32
	// MinAvailable is how many tasks are placed together.
	MinAvailable int32
	// RoleMin is the minimum of each role listed in spec.scheduling.roles,
	// in spec order.
	RoleMin []RoleMin
	// Queue is the Volcano queue, "default" when the spec names none.
	Queue string
	// PriorityClassName is the job's priority, "" for the cluster default.
	PriorityClassName string
	// ScheduleTimeoutSeconds is the coscheduling plugin's timeout, 0 for
	// its default.
	ScheduleTimeoutSeconds int32
	// Topology is the job's spec.scheduling.topology, nil for none, and
	// RoleTopology the roles' own, in spec order.
	Topology     *musterv1.Topology
	RoleTopology []RoleTopology
}

// RoleTopology is a role's topology request and its minimum, the part of
// it that is placed together.
type RoleTopology struct {
	Role     string
	Min      int32
	Topology musterv1.Topology
}

// RoleMin is a role's minimum within the gang.
type RoleMin struct {
	Role string
	Min  int32
}

// Resolve resolves the backend in force for a job: the one recorded in its
// status once chosen, else the spec's, else the operator's default. It
// never changes for the life of a job, whatever the default becomes.
func Resolve(job *musterv1.TrainingJob, def musterv1.GangBackend) musterv1.GangBackend {
	if s := job.Status.Scheduling; s != nil && s.Backend != "" {
		return s.Backend
	}
	if b := job.Spec.Scheduling.Backend; b != "" {
		return b
	}
	if def == "" {
		return musterv1.GangNone
	}
	return def
}

// For is the gang of the job's given attempt under backend b, or nil when
// b is None.
func For(job *musterv1.TrainingJob, b musterv1.GangBackend, attempt int32) *Gang {
	if b == musterv1.GangNone || b == "" {
		return nil
	}
	s := job.Spec.Scheduling
	g := &Gang{
		Backend:                b,
		Job:                    job.Name,
		Namespace:              job.Namespace,
		Name:                   GroupName(job.Name, attempt),
		Attempt:                attempt,
		MinAvailable:           s.MinAvailable,
		Queue:                  s.VolcanoQueue,
		PriorityClassName:      s.PriorityClassName,
		ScheduleTimeoutSeconds: s.ScheduleTimeoutSeconds,
		Topology:               s.Topology.Requested(),
	}
	if g.MinAvailable == 0 {
		g.MinAvailable = MinSize(job)
	}
	if b == musterv1.GangVolcano && g.Queue == "" {
		g.Queue = "default"
	}
	for i := range job.Spec.Roles {
		r := &job.Spec.Roles[i]
		if t := r.Topology.Requested(); t != nil {
			g.RoleTopology = append(g.RoleTopology, RoleTopology{Role: r.Name, Min: topology.MinReplicas(job, r), Topology: *t})
		}
	}
	for _, r := range job.Spec.Roles {
		if i := slices.IndexFunc(s.Roles, func(q musterv1.RoleScheduling) bool { return q.Name == r.Name }); i >= 0 {
			g.RoleMin = append(g.RoleMin, RoleMin{Role: r.Name, Min: s.Roles[i].MinAvailable})
		}
	}
	return g
}

// MinSize is the job's smallest size: every task of its fixed roles and
// the minReplicas of each scalable role. It is the default gang.
func MinSize(job *musterv1.TrainingJob) int32 {
	var n int32
	for i := range job.Spec.Roles {
		n += topology.MinReplicas(job, &job.Spec.Roles[i])
	}
	return n
}

// Placing is the attempt whose gang object places the pods of the
// status's current attempt: that attempt's own, unless the pods of the
// attempt before moved into it in place, which keep the gang that placed
// them, the one status.scheduling.podGroup names.
func Placing(job string, st *musterv1.TrainingJobStatus) int32 {
	if !movedInPlace(st) || st.Scheduling == nil {
		return st.Attempt
	}
	n, ok := strings.CutPrefix(st.Scheduling.PodGroup, job+"-")
	if !ok {
		return st.Attempt
	}
	a, err := strconv.ParseInt(n, 10, 32)
	if err != nil || a < 0 || int32(a) > st.Attempt {
		return st.Attempt
	}
	return int32(a)
}

// movedInPlace is whether pods of the attempt before the current one
// restarted in place into it.
func movedInPlace(st *musterv1.TrainingJobStatus) bool {
	for _, a := range st.Attempts {
		if a.ID == st.Attempt-1 {
			return a.PodRestarts != nil && a.PodRestarts.InPlace > 0
		}
	}
	return false
}

// GroupName is the name of an attempt's gang object.
func GroupName(job string, attempt int32) string {
	return job + "-" + strconv.Itoa(int(attempt))
}

// State is what a backend read from an attempt's gang object.
type State struct {
	// Admitted is whether the attempt's pods may be created: the object
	// exists and, for a queueing scheduler, the gang got into its queue.
	Admitted bool
	// Scheduled is the scheduler's word on the gang's placement: true
	// once placed, false while it cannot be, nil when it has said nothing.
	Scheduled *bool
	// Reason and Message say why the gang waits, in the scheduler's words.
	Reason, Message string
}

// A Backend is one gang scheduler's adapter.
type Backend interface {
	// Objects are the objects that make the gang, in creation order; the
	// last is the attempt's gang object, named g.Name.
	Objects(job *musterv1.TrainingJob, g *Gang) []client.Object
	// Decorate ties a task's pod to the gang.
	Decorate(pod *corev1.Pod, g *Gang)
	// NewGroupList is an empty list of the attempt gang objects' kind.
	NewGroupList() client.ObjectList
	// NewGroup is an empty attempt gang object, for watches.
	NewGroup() client.Object
	// Observe reads an attempt's gang object.
	Observe(group client.Object) State
}

// Labels are the labels of every gang object: the job's, so the operator's
// cache and the job's views select them.
func Labels(g *Gang) map[string]string {
	return map[string]string{musterv1.LabelJobName: g.Job, musterv1.LabelJobAttempt: strconv.Itoa(int(g.Attempt))}
}

// SetPriority gives the pod the job's priority class unless its template
// chose one.
func SetPriority(pod *corev1.Pod, g *Gang) {
	if pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = g.PriorityClassName
	}
}

// Parse reads a backend name, for flags.
func Parse(s string) (musterv1.GangBackend, error) {
	for _, b := range []musterv1.GangBackend{musterv1.GangNone, musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano} {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("unknown gang backend %q: want None, Native, Coscheduling or Volcano", s)
}
