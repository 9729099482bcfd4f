package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
)

// spec.tensorboard.logs.volume must name a volume of the job that another
// pod can read; the error names the field.
func TestTensorBoardVolume(t *testing.T) {
	good := testutil.MakeJob("j", "ns").Role("w", 1).TensorBoard("", time.Minute).Obj()
	if errs := ValidateCreate(good); len(errs) != 0 {
		t.Fatalf("a claim volume refused: %v", errs)
	}
	missing := good.DeepCopy()
	missing.Spec.TensorBoard.Logs.Volume = "nope"
	local := good.DeepCopy()
	local.Spec.Roles[0].Template.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	for name, tc := range map[string]struct {
		job  func() *musterv1.TrainingJob
		want string
	}{
		"missing":  {func() *musterv1.TrainingJob { return missing }, "names no volume"},
		"emptyDir": {func() *musterv1.TrainingJob { return local }, "names a volume of kind emptyDir"},
	} {
		errs := ValidateCreate(tc.job())
		if len(errs) != 1 || errs[0].Field != "spec.tensorboard.logs.volume" || !strings.Contains(errs[0].Detail, tc.want) {
			t.Errorf("%s: %v", name, errs)
		}
	}
}
