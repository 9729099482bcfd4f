package webhook

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/plan"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/internal/testutil/crdschema"
)

// FuzzAdmission puts fuzzed jobs through admission as the API server runs
// it, in process: the CRD's pruning, defaults, schema and CEL rules, then
// the webhook. It checks that:
//   - neither the CRD's rules nor the webhook panic, on any spec (the
//     planner validates jobs that skipped admission too);
//   - the webhook is deterministic, and each of its errors names a field
//     under spec;
//   - a job the CRD admits keeps within the API's bounds: replicas, the
//     number of tasks, names that make pod names of at most 63
//     characters;
//   - defaulting is idempotent: an admitted job, defaulted and admitted
//     again, comes back unchanged and still admitted;
//   - the planner, given a job both admit, plans it without panicking,
//     and its first pods have distinct names that fit.
func FuzzAdmission(f *testing.F) {
	api := crdschema.Load(f)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, "job", "worker", "samples/s=([0-9.]+)")
	f.Add([]byte("\x01\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"), "Bad_Name", "w", "(")
	f.Add([]byte("\xff\x80\x40\x20\x10\x08\x04\x02\x01\x00\xff\x80\x40\x20"), strings.Repeat("j", 40), strings.Repeat("r", 17), "no-group")
	f.Fuzz(func(t *testing.T, data []byte, name, role, regex string) {
		r, _ := testutil.FuzzRand(data)
		job := fuzzJob(r, fuzzText{name: name, role: role, regex: regex})
		obj := toUnstructured(t, job)
		apiErrs := api.Admit(obj)
		admitted := fromUnstructured(t, obj)

		err := webhookAdmit(admitted.DeepCopy())
		if again := webhookAdmit(admitted.DeepCopy()); !reflect.DeepEqual(err, again) {
			t.Fatalf("the webhook is not deterministic:\n%v\n%v", err, again)
		}
		checkCauses(t, err)
		if len(apiErrs) > 0 {
			return
		}
		checkBounds(t, admitted)
		if err != nil {
			return
		}
		checkIdempotent(t, api, admitted)
		checkPlans(t, admitted)
	})
}

// webhookAdmit is the webhook's answer to creating job: defaulted, then
// validated, with every gang backend driven.
func webhookAdmit(job *musterv1.TrainingJob) error {
	h := newTrainingJobWebhook()
	h.gangBackends = []musterv1.GangBackend{musterv1.GangNative, musterv1.GangCoscheduling, musterv1.GangVolcano}
	if err := h.Default(context.Background(), job); err != nil {
		return err
	}
	_, err := h.ValidateCreate(context.Background(), job)
	return err
}

// checkCauses checks that a denial names the field of each cause.
func checkCauses(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		t.Fatalf("a denial without field causes: %v", err)
	}
	for _, c := range status.Status().Details.Causes {
		if !strings.HasPrefix(c.Field, "spec.") {
			t.Fatalf("a cause names no field under spec: %+v", c)
		}
	}
}

// checkBounds checks what the CRD promises of every job it admits.
func checkBounds(t *testing.T, job *musterv1.TrainingJob) {
	t.Helper()
	if errs := validation.IsDNS1035Label(job.Name); len(errs) > 0 {
		t.Fatalf("admitted job name %q: %v", job.Name, errs)
	}
	tasks := int64(0)
	for _, role := range job.Spec.Roles {
		if errs := validation.IsDNS1035Label(role.Name); len(errs) > 0 {
			t.Fatalf("admitted role name %q: %v", role.Name, errs)
		}
		// The longest pod name has the largest index a job can have.
		if pod := job.Name + "-" + role.Name + "-" + "10000"; len(pod) > 63 {
			t.Fatalf("admitted a job whose pod %s is %d characters long", pod, len(pod))
		}
		if role.Replicas != nil && (*role.Replicas < 0 || *role.Replicas > musterv1.MaxReplicas) {
			t.Fatalf("admitted role %s with %d replicas", role.Name, *role.Replicas)
		}
		tasks += int64(ptrOr(role.Replicas, 1))
	}
	for _, sr := range job.Spec.Scaling.Roles {
		tasks += int64(sr.MaxReplicas)
	}
	if n := job.Spec.Scaling.Replicas; n != nil && (*n < 0 || *n > musterv1.MaxReplicas) {
		t.Fatalf("admitted spec.scaling.replicas %d", *n)
	}
	if tasks > musterv1.MaxTasks {
		t.Fatalf("admitted a job of up to %d tasks", tasks)
	}
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// checkIdempotent admits an admitted job again: nothing may change and
// nothing may be refused.
func checkIdempotent(t *testing.T, api *crdschema.APIServer, job *musterv1.TrainingJob) {
	t.Helper()
	obj := toUnstructured(t, job)
	if errs := api.Admit(obj); len(errs) > 0 {
		t.Fatalf("an admitted job, admitted again, is refused: %v", errs)
	}
	again := fromUnstructured(t, obj)
	if err := webhookAdmit(again); err != nil {
		t.Fatalf("an admitted job, defaulted again, is refused by the webhook: %v", err)
	}
	if !reflect.DeepEqual(job.Spec, again.Spec) {
		t.Fatalf("admitting twice changed the spec:\n%+v\n%+v", job.Spec, again.Spec)
	}
}

// checkPlans plans an admitted job's first step.
func checkPlans(t *testing.T, job *musterv1.TrainingJob) {
	t.Helper()
	job.UID = "uid"
	res := plan.Plan(plan.Input{Job: job, HasService: true, Now: time.Unix(1000, 0)})
	seen := map[string]bool{}
	for _, p := range res.CreatePods {
		if seen[p.Name] || len(p.Name) > 63 {
			t.Fatalf("the first plan creates pod %q twice or too long a name", p.Name)
		}
		seen[p.Name] = true
	}
}

// toUnstructured is job as the API server decodes a request: integers
// as int64, as the schema's validation and CEL expect.
func toUnstructured(t *testing.T, job *musterv1.TrainingJob) map[string]any {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func fromUnstructured(t *testing.T, obj map[string]any) *musterv1.TrainingJob {
	t.Helper()
	job := &musterv1.TrainingJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, job); err != nil {
		t.Fatal(err)
	}
	return job
}
