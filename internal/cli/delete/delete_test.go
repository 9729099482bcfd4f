package delete

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestDelete(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob(), clitest.FailedJob())
	r := clitest.Run(t, NewCmd, f, "pet", "bad", "gone", "--ignore-not-found")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	clitest.Golden(t, "delete", r.Out+r.Err)
	for _, name := range []string{"pet", "bad"} {
		err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: name}, &musterv1.TrainingJob{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("job %s: %v, want it gone", name, err)
		}
	}
}

func TestDeleteNotFound(t *testing.T) {
	r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}), "gone")
	if r.Error == nil || !strings.Contains(r.Error.Error(), "trainingjob team/gone not found") {
		t.Fatalf("got %v", r.Error)
	}
}
