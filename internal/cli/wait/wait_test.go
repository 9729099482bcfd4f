package wait

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
)

func TestWaitAlreadyMet(t *testing.T) {
	f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob())
	r := clitest.Run(t, NewCmd, f, "pet", "--for=condition=GangScheduled")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	clitest.Golden(t, "wait-already-met", r.Out+r.Err)
}

// watchStarted are factory options whose client closes watching once the
// wait has started its watch: a change made after that reaches it through
// the watch, not a poll.
func watchStarted() (clitest.Options, <-chan struct{}) {
	watching := make(chan struct{})
	return clitest.Options{Intercept: &interceptor.Funcs{
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			w, err := c.Watch(ctx, list, opts...)
			close(watching)
			return w, err
		},
	}}, watching
}

// The job changes after the wait has started watching it: the watch, not
// a poll, brings the news, and each change is a plain line on stderr.
func TestWaitFollowsTheJob(t *testing.T) {
	opts, watching := watchStarted()
	f := clitest.NewFactory(opts, clitest.QueuedJob())
	f.NS = "research"
	go func() {
		<-watching
		job := &musterv1.TrainingJob{}
		key := client.ObjectKey{Namespace: "research", Name: "big"}
		for _, phase := range []musterv1.JobPhase{musterv1.PhaseRunning, musterv1.PhaseSucceeded} {
			if err := f.Jobs.Get(context.Background(), key, job); err != nil {
				panic(err)
			}
			job.Status.Phase = phase
			job.Status.Ready = "64/64"
			if phase == musterv1.PhaseSucceeded {
				job.Status.Conditions = append(job.Status.Conditions, metav1.Condition{
					Type: string(musterv1.ConditionSucceeded), Status: metav1.ConditionTrue, Reason: string(musterv1.ReasonAllTasksCompleted), LastTransitionTime: metav1.Now()})
			}
			if err := f.Jobs.Status().Update(context.Background(), job); err != nil {
				panic(err)
			}
		}
	}()
	r := clitest.Run(t, NewCmd, f, "big", "--for=condition=Succeeded", "--timeout=10s")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	clitest.Golden(t, "wait-follows", r.Out+r.Err)
}

func TestWaitErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a failed job never succeeds": {args: []string{"bad", "--for=condition=Succeeded"},
			want: "trainingjob team/bad has finished as Failed (BackoffLimitExceeded: task worker-0 needed a restart and the job had used its 1 accountable restarts): it will never be Succeeded; `muster describe bad` says more"},
		"a timeout": {args: []string{"pet", "--for=phase=Succeeded", "--timeout=50ms"},
			want: "timed out after 50ms waiting for trainingjob team/pet to be Succeeded: it is Running, 4/4 ready; wait longer with --timeout"},
		"check once":    {args: []string{"pet", "--for=condition=Succeeded", "--timeout=0"}, want: "timed out after 0s"},
		"no such phase": {args: []string{"pet", "--for=phase=Done"}, want: "no such phase; phases are Pending, Running, Restarting, Suspended, Succeeded and Failed"},
		"no --for":      {args: []string{"pet"}, want: `"for" not set`},
		"a bad --for":   {args: []string{"pet", "--for=ready"}, want: "give condition=TYPE[=true|false], phase=PHASE, progress=PERCENT or delete"},
		"a bad percent": {args: []string{"pet", "--for=progress=150"}, want: "progress is a percent of training done, 0 to 100"},
		"no such job":   {args: []string{"nope", "--for=phase=Running"}, want: "trainingjob team/nope not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob(), clitest.FailedJob())
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", r.Error, tc.want)
			}
		})
	}
}

func TestParseFor(t *testing.T) {
	cases := map[string]Condition{
		"condition=Succeeded":     {Type: "Succeeded", Status: metav1.ConditionTrue},
		"condition=Running=false": {Type: "Running", Status: metav1.ConditionFalse},
		"phase=running":           {Phase: musterv1.PhaseRunning},
		"delete":                  {Delete: true},
	}
	for in, want := range cases {
		got, err := ParseFor(in)
		if err != nil || got != want {
			t.Errorf("ParseFor(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestParseForProgress(t *testing.T) {
	for in, want := range map[string]int32{"progress=50": 50, "progress=100%": 100, "progress=0": 0} {
		got, err := ParseFor(in)
		if err != nil || got.Progress == nil || *got.Progress != want {
			t.Errorf("ParseFor(%q) = %+v, %v; want progress %d", in, got, err, want)
		}
	}
}

// --for=progress=50 waits until the job's program reports half of its
// training done, whatever the phase.
func TestWaitForProgress(t *testing.T) {
	opts, watching := watchStarted()
	f := clitest.NewFactory(opts, clitest.ElasticJob())
	go func() {
		<-watching
		job := &musterv1.TrainingJob{}
		key := client.ObjectKey{Namespace: "team", Name: "pet"}
		for _, percent := range []int32{30, 60} {
			if err := f.Jobs.Get(context.Background(), key, job); err != nil {
				panic(err)
			}
			job.Status.Progress = &musterv1.ProgressStatus{Percent: new(percent)}
			if err := f.Jobs.Status().Update(context.Background(), job); err != nil {
				panic(err)
			}
		}
	}()
	r := clitest.Run(t, NewCmd, f, "pet", "--for=progress=50", "--timeout=10s")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if !strings.Contains(r.Err, "to be 50% done: now Running, 4/4 ready, 30% done") || strings.TrimSpace(r.Out) != "trainingjob.muster.dev/pet condition met" {
		t.Errorf("stdout %q, stderr %q", r.Out, r.Err)
	}
}
