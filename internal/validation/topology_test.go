package validation_test

import (
	"strings"
	"testing"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/queue/kueue"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/validation"
)

// A topology request is accepted only where something places it: Kueue
// for a queued job (either mode, per job or per role), else the gang
// backend (Native: job-wide Required; Volcano: any), and each refusal
// names the field.
func TestTopologyIsRefusedWhereNothingHonoursIt(t *testing.T) {
	const block = "example.com/block"
	jobWide := func(mode musterv1.TopologyMode, roles ...int32) *musterv1.TrainingJob {
		b := testutil.MakeJob("j", "ns")
		for i, n := range roles {
			b.Role([]string{"launcher", "worker", "evaluator"}[i], n)
		}
		job := b.Obj()
		job.Spec.Scheduling.Topology = musterv1.Topology{Level: block, Mode: mode}
		return job
	}
	queued := func(job *musterv1.TrainingJob) *musterv1.TrainingJob {
		job.Labels = map[string]string{kueue.LabelQueueName: "team-a"}
		return job
	}
	perRole := testutil.MakeJob("j", "ns").Role("ps", 2).RoleTopology("example.com/rack", musterv1.TopologyPreferred).Role("worker", 4).RoleTopology(block, musterv1.TopologyRequired).Obj()
	elastic := queued(testutil.MakeJob("j", "ns").Role("worker", 0).Scalable(1, 4).RoleTopology(block, musterv1.TopologyRequired).Obj())
	elastic.Annotations = map[string]string{kueue.AnnotationElasticJob: "true"}
	badLevel := jobWide(musterv1.TopologyRequired, 4)
	badLevel.Spec.Scheduling.Topology.Level = "not a label/"
	longLevel := queued(jobWide(musterv1.TopologyRequired, 4))
	longLevel.Spec.Scheduling.Topology.Level = "example.com/" + strings.Repeat("a", 60)

	for _, tc := range []struct {
		name    string
		job     *musterv1.TrainingJob
		backend musterv1.GangBackend
		want    string // the refused field, "" for accepted
	}{
		{"no request, any backend", testutil.MakeJob("j", "ns").Role("worker", 2).Obj(), musterv1.GangNone, ""},
		{"native required", jobWide(musterv1.TopologyRequired, 4), musterv1.GangNative, ""},
		{"native preferred", jobWide(musterv1.TopologyPreferred, 4), musterv1.GangNative, "spec.scheduling.topology.mode"},
		{"volcano preferred", jobWide(musterv1.TopologyPreferred, 1, 4), musterv1.GangVolcano, ""},
		{"no gang", jobWide(musterv1.TopologyRequired, 4), musterv1.GangNone, "spec.scheduling.topology"},
		{"coscheduling", jobWide(musterv1.TopologyRequired, 4), musterv1.GangCoscheduling, "spec.scheduling.topology"},
		{"per role on the native gang", perRole, musterv1.GangNative, "spec.roles[0].topology"},
		{"per role on Volcano", perRole, musterv1.GangVolcano, ""},
		{"kueue per role", queued(perRole.DeepCopy()), musterv1.GangNone, ""},
		{"kueue one role preferred", queued(jobWide(musterv1.TopologyPreferred, 4)), musterv1.GangNone, ""},
		{"kueue launcher beside workers", queued(jobWide(musterv1.TopologyRequired, 1, 4)), musterv1.GangNone, ""},
		{"kueue two roles of several", queued(jobWide(musterv1.TopologyRequired, 2, 4)), musterv1.GangNone, "spec.scheduling.topology"},
		{"kueue three roles", queued(jobWide(musterv1.TopologyRequired, 1, 4, 1)), musterv1.GangNone, "spec.scheduling.topology"},
		{"kueue elastic", elastic, musterv1.GangNone, "spec.roles[0].topology"},
		{"kueue level too long", longLevel, musterv1.GangNone, "spec.scheduling.topology.level"},
		{"not a label key", badLevel, musterv1.GangNative, "spec.scheduling.topology.level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validation.Topology(tc.job, tc.backend)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.want != "" && len(errs) == 0:
				t.Errorf("accepted, want %s refused", tc.want)
			case tc.want != "" && errs[0].Field != tc.want:
				t.Errorf("refused %s (%v), want %s", errs[0].Field, errs, tc.want)
			}
		})
	}
}
