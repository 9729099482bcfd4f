package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan/topology"
)

// defaultBelowMinTimeout bounds how long an elastic role may run short.
const defaultBelowMinTimeout = 600 * time.Second

// checkElasticSize fails an elastic job only once its role has had fewer
// than minReplicas running tasks for belowMinTimeoutSeconds: a lost worker is replaced meanwhile, and a role that comes
// back to minReplicas clears the clock.
func checkElasticSize(c *planContext, st *musterv1.TrainingJobStatus, v jobDecision, out *Result) jobDecision {
	if topology.ElasticPolicy(c.job) == nil || v.decided() {
		return v
	}
	// One world spans the elastic roles: count and bound them together.
	var minN, up int32
	for _, name := range topology.ElasticRoles(c.job) {
		role := topology.Find(c.job, name)
		rs := roleStatus(st, name)
		if role == nil || rs == nil {
			continue
		}
		minN += topology.MinReplicas(c.job, role)
		for _, t := range rs.Tasks {
			if counted(t) && (t.State == musterv1.TaskRunning || t.State == musterv1.TaskSucceeded) {
				up++
			}
		}
	}
	es := elasticStatus(c, st)
	if up >= minN {
		es.BelowMinSince = nil
		return v
	}
	if es.BelowMinSince == nil {
		es.BelowMinSince = new(metav1.NewTime(c.now.Time))
	}
	timeout := defaultBelowMinTimeout
	if t := c.job.Spec.Scaling.BelowMinTimeoutSeconds; t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	if left := es.BelowMinSince.Add(timeout).Sub(c.now.Time); left > 0 {
		out.RequeueWithin(left)
		return v
	}
	return v.fail(musterv1.CompletionStatus{
		Reason: musterv1.ReasonBelowMinReplicas, Role: topology.ElasticRoles(c.job)[0],
		Message: fmt.Sprintf("the elastic world has had fewer than minReplicas (%d) running tasks for %s", minN, timeout),
	})
}
