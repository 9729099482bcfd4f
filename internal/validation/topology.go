package validation

import (
	"fmt"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
)

// Topology refuses a topology request that what would carry it out cannot
// honour. A job in a Kueue LocalQueue is placed by Kueue's topology-aware
// scheduling, which takes either mode, per job or per role; any other job
// by its gang backend (backend, the one in force): Native takes a
// job-wide Required request, Volcano any (per role, a subgroup of its
// PodGroup), and None and Coscheduling none. A request nothing honours would leave the
// job's pods placed anywhere while it says they are close.
func Topology(job *musterv1.TrainingJob, backend musterv1.GangBackend) field.ErrorList {
	var errs field.ErrorList
	var requests []request
	if t := job.Spec.Scheduling.Topology.Requested(); t != nil {
		requests = append(requests, request{field.NewPath("spec", "scheduling", "topology"), t, true})
	}
	for i := range job.Spec.Roles {
		if t := job.Spec.Roles[i].Topology.Requested(); t != nil {
			requests = append(requests, request{field.NewPath("spec", "roles").Index(i).Child("topology"), t, false})
		}
	}
	for _, r := range requests {
		for _, msg := range utilvalidation.IsQualifiedName(r.t.Level) {
			errs = append(errs, field.Invalid(r.path.Child("level"), r.t.Level, "must be a node label key: "+msg))
		}
	}
	if len(requests) == 0 || len(errs) > 0 {
		return errs
	}
	if kueue.QueueName(job) != "" {
		return append(errs, kueueTopology(job, requests)...)
	}
	for _, r := range requests {
		path, t := r.path, r.t
		if !r.job && backend != musterv1.GangVolcano {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"gang backend %s places no role apart from the rest: use spec.scheduling.topology for the whole job, backend Volcano (a subgroup per role), or a Kueue LocalQueue (%s)", backend, kueue.LabelQueueName)))
			continue
		}
		switch backend {
		case musterv1.GangNative:
			if t.Mode == musterv1.TopologyPreferred {
				errs = append(errs, field.NotSupported(path.Child("mode"), t.Mode, []string{string(musterv1.TopologyRequired)}))
			}
		case musterv1.GangVolcano:
		default:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"gang backend %s cannot place a job within one domain: use backend Native (Required) or Volcano, or a Kueue LocalQueue (%s)", backend, kueue.LabelQueueName)))
		}
	}
	return errs
}

// kueueTopology refuses what Kueue's topology-aware scheduling cannot do.
func kueueTopology(job *musterv1.TrainingJob, requests []request) field.ErrorList {
	var errs field.ErrorList
	for _, r := range requests {
		path, t := r.path, r.t
		if len(t.Level) > kueue.MaxLevelLength {
			errs = append(errs, field.TooLong(path.Child("level"), t.Level, kueue.MaxLevelLength))
		}
		if kueue.Elastic(job) {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf(
				"Kueue resizes an elastic job (%s) through workload slices, which take no topology request", kueue.AnnotationElasticJob)))
		}
		if r.job && !kueue.JobTopologyFits(job) {
			errs = append(errs, field.Forbidden(path,
				"Kueue places several roles within one domain only as two, one of them a single task (a launcher or master beside its workers): set spec.roles[].topology on each role instead"))
		}
	}
	return errs
}

// request is one topology request and where the spec makes it: job-wide
// (spec.scheduling.topology) or for one role.
type request struct {
	path *field.Path
	t    *musterv1.Topology
	job  bool
}
