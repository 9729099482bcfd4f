package plan

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/validation"
)

// holdUps are why a job that runs is not running yet, for its Running
// condition.
type holdUps struct {
	// blocked are the objects the cluster refused to create.
	blocked []blocked
	// waiting are the roles dependsOn holds back.
	waiting []string
	// store: elastic tasks wait for the rendezvous store to run.
	store bool
}

// run is the plan of a job that runs. Each phase takes the jobDecision the
// earlier ones reached and returns it, decided further or not.
func run(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, out *Result) (jobDecision, holdUps) {
	if st.StartTime == nil {
		st.StartTime = new(startTime(c))
	}
	// What CEL cannot check is checked here as the admission webhook does:
	// a job that reached the cluster without the webhook and breaks a rule
	// fails at once, before anything is created for it, with the fields
	// named.
	if errs := append(validation.Spec(&c.job.Spec), validation.Topology(c.job, c.backend)...); len(errs) > 0 {
		v = v.failForGood(musterv1.CompletionStatus{Reason: musterv1.ReasonInvalidSpec, Message: errs.ToAggregate().Error()})
		finish(c, st, *v.outcome, out)
		return v, holdUps{}
	}
	v = checkDeadline(c, st, v, out)
	delayed := holdForDelay(c, st, out)
	storeReady, v := syncStore(c, st, v, delayed, out)
	v, held := syncRoles(c, st, v, gates{delayed: delayed, storeReady: storeReady}, out)
	v = checkElasticSize(c, st, v, out)
	return resolve(c, st, v, out), held
}

// startTime is when a job with no start time recorded started: now, or,
// for a job with no status written yet that has pods already (its first
// status waited for them to run: StartOnly), when its first pod was made.
// A job resumed after a suspension starts now, whatever pods of its run
// before are still going.
func startTime(c *planContext) metav1.Time {
	start := c.now
	if c.job.Status.Phase != "" {
		return start
	}
	for _, pod := range c.pods.Tasks {
		if t := pod.CreationTimestamp; !t.IsZero() && t.Before(&start) {
			start = t
		}
	}
	return start
}

func checkDeadline(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, out *Result) jobDecision {
	d := c.job.Spec.Run.ActiveDeadlineSeconds
	if d == 0 || v.outcome != nil {
		return v
	}
	deadline := st.StartTime.Add(time.Duration(d) * time.Second)
	if left := deadline.Sub(c.now.Time); left > 0 {
		out.RequeueWithin(left)
		return v
	}
	return v.fail(musterv1.CompletionStatus{
		Reason:  musterv1.ReasonDeadlineExceeded,
		Message: "the job was active longer than spec.run.activeDeadlineSeconds (" + strconv.FormatInt(d, 10) + "s)",
	})
}

// resolve carries out the jobDecision: a new attempt for a restart,
// else the completion rules, and an outcome either retried as a new
// attempt or recorded as the job's end.
func resolve(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, out *Result) jobDecision {
	if v.restart != nil && v.outcome == nil {
		newAttempt(c, st, *v.restart, nil, out)
		return v
	}
	if v.outcome == nil {
		v.outcome = EvaluateCompletion(c.job, st.Roles)
	}
	if v.outcome == nil {
		return v
	}
	r := decideRetry(c, st, *v.outcome)
	if r.restart == nil {
		finish(c, st, r.outcome, out)
		return jobDecision{outcome: &r.outcome}
	}
	newAttempt(c, st, *r.restart, &r.outcome, out)
	if r.delay > 0 {
		st.NextAttemptTime = new(metav1.NewTime(c.now.Add(r.delay)))
		out.event(false, musterv1.EventReasonJobRestarting, "the new attempt waits "+r.delay.String()+" after a resource conflict")
	}
	return jobDecision{restart: r.restart}
}
