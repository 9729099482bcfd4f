package top

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/clitest"
	"github.com/muster-dev/muster/internal/testutil"
)

func TestTop(t *testing.T) {
	cases := map[string]struct {
		args []string
		ns   string
	}{
		"table":          {},
		"all-namespaces": {args: []string{"-A"}},
		"one-job":        {args: []string{"pet"}},
		"no-headers":     {args: []string{"--no-headers"}},
		"selector":       {args: []string{"-l", "team=vision"}},
		"empty":          {ns: "nobody"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := clitest.NewFactory(clitest.Options{}, clitest.ElasticJob(), clitest.FailedJob(), clitest.QueuedJob())
			if tc.ns != "" {
				f.NS = tc.ns
			}
			r := clitest.Run(t, NewCmd, f, tc.args...)
			if r.Error != nil {
				t.Fatalf("error: %v\nstderr: %s", r.Error, r.Err)
			}
			clitest.Golden(t, "top-"+name, r.Out+r.Err)
		})
	}
}

func TestTopErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a job that does not exist": {args: []string{"pet", "nope"}, want: "trainingjob team/nope not found: `muster get -n team` lists the namespace's jobs"},
		"names and -A":              {args: []string{"pet", "-A"}, want: "name jobs or pass -A, not both"},
		"a bad selector":            {args: []string{"-l", "a b"}, want: `-l "a b"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clitest.Run(t, NewCmd, clitest.NewFactory(clitest.Options{}, clitest.ElasticJob()), tc.args...)
			if r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", r.Error, tc.want)
			}
		})
	}
}

// With -w the table is printed anew when a job changes or goes: the watch,
// not a poll, brings the news.
func TestTopWatch(t *testing.T) {
	watching := make(chan struct{}, 1)
	f := clitest.NewFactory(clitest.Options{Intercept: &interceptor.Funcs{
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			w, err := c.Watch(ctx, list, opts...)
			watching <- struct{}{}
			return w, err
		},
	}}, clitest.ElasticJob(), clitest.FailedJob())
	var out, errOut testutil.SyncBuffer
	cmd := NewCmd(f, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"-w"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	waitFor := func(tables int) {
		t.Helper()
		for strings.Count(out.String(), "NAME") < tables {
			select {
			case <-ctx.Done():
				t.Fatalf("%d tables expected, got:\n%s", tables, out.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	<-watching
	waitFor(1)
	key := client.ObjectKey{Namespace: "team", Name: "pet"}
	job := &musterv1.TrainingJob{}
	if err := f.Jobs.Get(ctx, key, job); err != nil {
		t.Fatal(err)
	}
	job.Status.Autoscaler.LastSample = "501"
	job.Status.Autoscaler.LastSampleAt = nil
	job.Status.Replicas, job.Status.Ready = 4, "5/5"
	if err := f.Jobs.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitFor(2)
	if err := f.Jobs.Delete(ctx, clitest.FailedJob()); err != nil {
		t.Fatal(err)
	}
	waitFor(3)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "top-watch", out.String()+errOut.String())
}
