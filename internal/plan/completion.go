package plan

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/failure"
	"github.com/muster-dev/muster/internal/plan/objects"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// Rule is a role's completion policy with presets filled in. A value below
// 1 disables that half.
type Rule struct {
	MinSucceeded, MinFailed int32
}

// EffectiveCompletion is the completion rule of each role of a job as
// Effective returns it. A role's own spec.roles[].completion wins;
// otherwise the preset is chosen from the roles present:
//   - PyTorch with a master role and other roles ("master decides"): the
//     master succeeds the job with its one task; any task failing for good
//     fails it.
//   - the elastic role ("any worker"): one succeeded worker succeeds the
//     job; it fails only once fewer than minReplicas tasks could still run.
//   - MPI ("launcher decides"): the launcher succeeds the job; workers,
//     which serve SSH until they are stopped, never end it by succeeding.
//   - TensorFlow with a chief (or master) role ("chief decides"); without
//     one, every worker succeeding succeeds the job, since parameter
//     servers never end on their own.
//   - PaddlePaddle parameter server ("trainers decide"): every trainer
//     succeeding succeeds the job, as Volcano's TaskCompleted -> CompleteJob
//     does; pservers serve until they are stopped.
//   - otherwise ("all tasks"): any task failing for good fails the job, and
//     it succeeds when every task has ended.
func EffectiveCompletion(job *musterv1.TrainingJob) map[string]Rule {
	out := make(map[string]Rule, len(job.Spec.Roles))
	masterDecides := false
	if rt := job.Spec.Runtime; rt != nil && rt.PyTorch != nil {
		masterDecides = len(job.Spec.Roles) > 1
	}
	master := topology.MasterRole(job)
	deciders := runtimeDeciders(job)
	for _, r := range job.Spec.Roles {
		rule := Rule{MinSucceeded: -1, MinFailed: 1}
		switch {
		case topology.IsElastic(job, r.Name):
			rule = Rule{MinSucceeded: 1, MinFailed: topology.Replicas(&r) - topology.MinReplicas(job, &r) + 1}
		case masterDecides && r.Name == master:
			rule = Rule{MinSucceeded: 1, MinFailed: 1}
		case deciders[r.Name]:
			rule = Rule{MinSucceeded: topology.Replicas(&r), MinFailed: 1}
		}
		if c := r.Completion; c != nil {
			if c.MinSucceeded != nil {
				rule.MinSucceeded = *c.MinSucceeded
			}
			if c.MinFailed != nil {
				rule.MinFailed = *c.MinFailed
			}
		}
		out[r.Name] = rule
	}
	return out
}

// Outcome is how a job finished.
type Outcome struct {
	Succeeded  bool
	Completion musterv1.CompletionStatus
	// NoRetry: the end is final whatever spec.retry says (a stop, a spent
	// budget, an invalid spec).
	NoRetry bool
	at      metav1.Time
}

// EvaluateCompletion applies the completion rules to the task states. When
// several rules hold, the one whose triggering task ended first wins. When
// none holds but every task has ended, the job succeeded. A job with no
// tasks never completes by policy.
func EvaluateCompletion(job *musterv1.TrainingJob, roles []musterv1.RoleStatus) *Outcome {
	rules := EffectiveCompletion(job)
	var best *Outcome
	consider := func(o *Outcome) {
		if o != nil && (best == nil || o.at.Time.Before(best.at.Time)) {
			best = o
		}
	}
	total, ended := 0, 0
	for i := range roles {
		rs := &roles[i]
		rule := rules[rs.Name]
		consider(trigger(rs, musterv1.TaskFailed, rule.MinFailed, "FailedTaskCount", "MinFailedTaskCount"))
		consider(trigger(rs, musterv1.TaskSucceeded, rule.MinSucceeded, "SucceededTaskCount", "MinSucceededTaskCount"))
		for _, t := range rs.Tasks {
			if !counted(t) {
				continue
			}
			total++
			if t.State == musterv1.TaskSucceeded || t.State == musterv1.TaskFailed {
				ended++
			}
		}
	}
	if best != nil {
		return best
	}
	if total > 0 && ended == total {
		return &Outcome{Succeeded: true, Completion: musterv1.CompletionStatus{
			Reason: musterv1.ReasonAllTasksCompleted,
			Message: fmt.Sprintf("CompletedTaskCount %d has reached TotalTaskCount %d and no completion policy was triggered",
				ended, total),
		}}
	}
	return nil
}

// trigger checks one half of a role's rule. The triggering task is the
// min-th to reach state, in order of when it ended.
func trigger(rs *musterv1.RoleStatus, state musterv1.TaskState, minCount int32, countName, minName string) *Outcome {
	if minCount < 1 {
		return nil
	}
	var hits []musterv1.TaskStatus
	for _, t := range rs.Tasks {
		if counted(t) && t.State == state {
			hits = append(hits, t)
		}
	}
	if int32(len(hits)) < minCount {
		return nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return endedAt(hits[i]).Time.Before(endedAt(hits[j]).Time) })
	t := hits[minCount-1]
	reason := musterv1.ReasonCompletionPolicy
	o := &Outcome{
		Succeeded: state == musterv1.TaskSucceeded,
		at:        endedAt(t),
		Completion: musterv1.CompletionStatus{
			Reason: reason,
			// The count when the trigger task ended, whatever else ended in
			// the same reconcile.
			Message: fmt.Sprintf("%s %d has reached %s %d in role %s", countName, minCount, minName, minCount, rs.Name),
			Role:    rs.Name,
			Index:   new(t.Index),
		},
	}
	if t.LastExit != nil {
		inheritExit(&o.Completion, t.LastExit)
		if state == musterv1.TaskFailed {
			o.Completion.Message += ", triggered by " + t.Pod + " with " + failure.DescribeExit(*t.LastExit)
		}
	}
	return o
}

func endedAt(t musterv1.TaskStatus) metav1.Time {
	if t.LastExit != nil && t.LastExit.FinishedAt != nil {
		return *t.LastExit.FinishedAt
	}
	return metav1.Time{}
}

// runtimeDeciders are the roles whose tasks, all succeeded, succeed a job
// of the runtimes whose other roles serve until stopped. None where every
// task ends on its own.
func runtimeDeciders(job *musterv1.TrainingJob) map[string]bool {
	rt := job.Spec.Runtime
	out := map[string]bool{}
	switch {
	case rt == nil:
	case rt.MPI != nil:
		out[job.Spec.Roles[len(job.Spec.Roles)-1].Name] = true
	case rt.Paddle != nil && rt.Paddle.Mode != musterv1.PaddleCollective:
		_, trainer := objects.PaddleRoles(rt.Paddle)
		out[trainer] = true
	case rt.TensorFlow != nil:
		var chiefs, workers []string
		for _, r := range job.Spec.Roles {
			switch objects.TFTaskType(rt.TensorFlow, r.Name) {
			case string(musterv1.TFChief), string(musterv1.TFMaster):
				chiefs = append(chiefs, r.Name)
			case string(musterv1.TFWorker):
				workers = append(workers, r.Name)
			}
		}
		if len(chiefs) == 0 {
			chiefs = workers
		}
		for _, n := range chiefs {
			out[n] = true
		}
	}
	return out
}
