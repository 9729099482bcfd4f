package run

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/validation"
)

func TestRunPrints(t *testing.T) {
	cases := map[string][]string{
		"elastic-script": {"mnist", "--image", "pytorch/pytorch:2.5.1-cpu", "--nnodes", "2:4", "--nproc-per-node", "2",
			"--script", "testdata/train.py", "--env", "EPOCHS=5", "--gpus", "1", "--queue", "team-a", "--dry-run=client", "-o", "yaml", "--", "--lr", "0.1"},
		"plain-command": {"sweep", "--image", "python:3.11", "--runtime", "none", "--nnodes", "3", "--restart-policy", "Never",
			"--backoff-limit", "0", "--restart-mode", "Recreate", "--gang", "Native", "--dry-run=client", "-o", "yaml", "--", "python3", "-c", "print('hi')"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}), args...)
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			clitest.Golden(t, "run-"+name, r.Out)
		})
	}
}

// What run builds is a job the API accepts: the project's own validation
// (the webhook's) finds nothing wrong with it.
func TestBuiltJobsAreValid(t *testing.T) {
	for _, s := range []Spec{
		{Name: "a", Namespace: "ns", Image: "i", Script: "x", ScriptName: "t.py", PyTorch: true, MinNodes: 2, MaxNodes: 4, NProcPerNode: "1", Role: "worker", RestartPolicy: musterv1.RestartPolicyOnFailure},
		{Name: "b", Namespace: "ns", Image: "i", Command: []string{"true"}, MinNodes: 3, MaxNodes: 3, Role: "w", RestartPolicy: musterv1.RestartPolicyNever},
	} {
		job, _ := Build(s)
		if errs := validation.Spec(&job.Spec); len(errs) > 0 {
			t.Errorf("%s: %v", s.Name, errs)
		}
	}
}

func TestRunCreatesTheJobAndItsScript(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{})
	r := clitest.Run(t, NewCmd, f, "mnist", "--image", "img", "--nnodes", "2:4", "--script", "testdata/train.py")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if r.Out != "trainingjob.muster.dev/mnist created\n" {
		t.Errorf("out %q", r.Out)
	}
	job := &musterv1.TrainingJob{}
	if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "mnist"}, job); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := f.Jobs.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "mnist-script"}, cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["train.py"], "init_process_group") {
		t.Errorf("configmap %+v", cm)
	}
	// The fake client gives no UIDs; the API server does, and then the
	// ConfigMap is the job's.
	if job.UID != "" && (len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != job.UID) {
		t.Errorf("configmap owners %+v", cm.OwnerReferences)
	}
}

func TestRunErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no image":        {[]string{"j", "--", "true"}, `required flag(s) "image" not set`},
		"nothing to run":  {[]string{"j", "--image", "i"}, "nothing to run: give --script FILE or a command after --"},
		"bad range":       {[]string{"j", "--image", "i", "--nnodes", "4:2", "--", "true"}, `--nnodes "4:2": N or MIN:MAX, with 1 <= MIN <= MAX`},
		"range, no torch": {[]string{"j", "--image", "i", "--runtime", "none", "--nnodes", "1:2", "--", "true"}, "a range needs the pytorch runtime"},
		"bad runtime":     {[]string{"j", "--image", "i", "--runtime", "jax", "--", "true"}, "--runtime jax: pytorch or none"},
		"bad env":         {[]string{"j", "--image", "i", "--env", "X", "--", "true"}, `--env "X": NAME=VALUE`},
		"two names":       {[]string{"j", "k", "--image", "i", "--", "true"}, "one job name before --, got [j k]"},
		"missing script":  {[]string{"j", "--image", "i", "--script", "testdata/nope.py"}, "--script: open testdata/nope.py"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}), tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want %q", r.Error, tc.want)
			}
		})
	}
}
