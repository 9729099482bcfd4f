// Package clitest runs muster's verbs against fake clients and compares
// their output with golden files. Regenerate the golden files with
//
//	go test ./internal/cli/... -update
package clitest

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/testutil"
)

// Now is the fake clock's time: every age in golden files counts from it.
var Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Factory is a cmdutil.Factory over fake clients.
type Factory struct {
	*genericclioptions.TestConfigFlags
	Jobs      client.WithWatch
	Kube      *k8sfake.Clientset
	Clk       *clocktesting.FakeClock
	NS        string
	Explicit  bool
	ClientErr error
	// Logs, when set, answers pods' log requests.
	Logs LogsFunc
}

type kubernetesFake = k8sfake.Clientset

var _ cmdutil.Factory = (*Factory)(nil)

// Options change the fake clients.
type Options struct {
	// Intercept wraps the TrainingJob client, to fail or change calls.
	Intercept *interceptor.Funcs
}

// NewFactory puts TrainingJobs in the controller-runtime fake client and
// every other object (pods, events) in the client-go fake clientset.
func NewFactory(opts Options, objs ...runtime.Object) *Factory {
	var jobs []client.Object
	var kube []runtime.Object
	for _, o := range objs {
		if j, ok := o.(*musterv1.TrainingJob); ok {
			jobs = append(jobs, j)
		} else {
			kube = append(kube, o)
		}
	}
	b := fake.NewClientBuilder().WithScheme(cmdutil.Scheme).WithObjects(jobs...).WithStatusSubresource(&musterv1.TrainingJob{})
	if opts.Intercept != nil {
		b = b.WithInterceptorFuncs(*opts.Intercept)
	}
	return &Factory{
		TestConfigFlags: genericclioptions.NewTestConfigFlags(),
		Jobs:            b.Build(),
		Kube:            k8sfake.NewClientset(kube...),
		Clk:             clocktesting.NewFakeClock(Now),
		NS:              "team",
	}
}

func (f *Factory) Client() (client.WithWatch, error) { return f.Jobs, f.ClientErr }

func (f *Factory) KubeClient() (kubernetes.Interface, error) {
	if f.Logs != nil {
		return kubeWithLogs{fakeClientset: f.Kube, logs: f.Logs}, f.ClientErr
	}
	return f.Kube, f.ClientErr
}

func (f *Factory) Namespace() (string, bool, error) { return f.NS, f.Explicit, nil }

func (f *Factory) Clock() clock.WithTicker { return f.Clk }

// Result is what a command printed.
type Result struct {
	Out, Err string
	Error    error
}

// NewCmd is a verb's constructor.
type NewCmd func(cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command

// Run runs one verb's command with args, against the fake clients.
func Run(t *testing.T, newCmd NewCmd, f *Factory, args ...string) Result {
	t.Helper()
	return RunWithInput(t, newCmd, f, "", args...)
}

// RunWithInput runs a command with stdin.
func RunWithInput(t *testing.T, newCmd NewCmd, f *Factory, stdin string, args ...string) Result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: bytes.NewBufferString(stdin), Out: &out, ErrOut: &errOut}
	cmd := newCmd(f, streams)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	// cobra reads os.Args, the test binary's flags, when args is nil.
	cmd.SetArgs(append([]string{}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return Result{Out: out.String(), Err: errOut.String(), Error: err}
}

// Golden compares got with testdata/<name>.golden, or writes it there with
// -update.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), got)
}

// Event is an event about obj of kind, reason and message, seen age ago.
func Event(namespace, kind, name, eventType, reason, message string, age time.Duration) *corev1.Event {
	at := metav1.NewTime(Now.Add(-age))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + "." + reason, Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: namespace, Name: name},
		Type:           eventType, Reason: reason, Message: message,
		FirstTimestamp: at, LastTimestamp: at, Count: 1,
		Source: corev1.EventSource{Component: "muster-operator"},
	}
}
