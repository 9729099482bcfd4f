// Package tensorboard implements `muster tensorboard`: it waits for a job's
// TensorBoard (spec.tensorboard) to be ready and forwards a local port to
// it, as `kubectl port-forward` does, until interrupted.
package tensorboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/cli/progress"
	"github.com/muster-dev/muster/internal/plan/objects"
)

const example = `  # Open job pet's TensorBoard on http://127.0.0.1:6006 until Ctrl-C
  muster tensorboard pet

  # On another local port, reachable from other machines
  muster tensorboard pet --port 8080 --address 0.0.0.0`

// Forwarder forwards local to port 6006 of pod until ctx ends, calling
// ready with the local port once it listens.
type Forwarder func(ctx context.Context, pod *corev1.Pod, address string, local int, ready func(port uint16)) error

// Options are tensorboard's flags and what Complete derives from them.
type Options struct {
	Port    int
	Address string
	Timeout time.Duration

	Name      string
	Namespace string
	Client    client.WithWatch
	Kube      kubernetes.Interface
	// Forward does the forwarding; Complete sets one through the API
	// server's pods/portforward.
	Forward Forwarder
	factory cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the tensorboard command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return NewCmdForwarding(nil)(f, streams)
}

// NewCmdForwarding returns a constructor of the command that forwards with
// forward (nil: through the API server).
func NewCmdForwarding(forward Forwarder) func(cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		return newCmd(f, streams, forward)
	}
}

func newCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, forward Forwarder) *cobra.Command {
	o := &Options{IOStreams: streams, Forward: forward}
	cmd := &cobra.Command{
		Use:   "tensorboard JOB [--port 6006] [--address 127.0.0.1]",
		Short: "Forward a local port to a job's TensorBoard",
		Long: "Tensorboard waits until the TensorBoard of the job (spec.tensorboard) is ready, showing what it\n" +
			"waits for, then forwards a local port to it through the API server, as kubectl port-forward does,\n" +
			"and prints the URL to open. It runs until interrupted, and stops with an error when the\n" +
			"TensorBoard's pod goes away (run it again to reach its replacement).",
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cmdutil.JobNames(f, 1),
		RunE:              cmdutil.RunE(func(a []string) error { return o.Complete(f, a) }, o.Validate, o.Run),
	}
	cmd.Flags().IntVar(&o.Port, "port", musterv1.TensorBoardPort, "local port; 0 picks a free one")
	cmd.Flags().StringVar(&o.Address, "address", "127.0.0.1", "local address to listen on")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for the TensorBoard to be ready")
	return cmd
}

// Complete connects and resolves the namespace.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	o.Name, o.factory = args[0], f
	var err error
	if o.Namespace, _, err = f.Namespace(); err != nil {
		return err
	}
	if o.Client, err = f.Client(); err != nil {
		return err
	}
	if o.Kube, err = f.KubeClient(); err != nil {
		return err
	}
	if o.Forward == nil {
		cfg, err := f.ToRESTConfig()
		if err != nil {
			return err
		}
		o.Forward = apiServerForwarder(cfg, o.Kube, o.IOStreams)
	}
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d: a port is 0 (any free one) to 65535", o.Port)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: give how long to wait for the TensorBoard, e.g. 5m", o.Timeout)
	}
	return nil
}

// Run waits for the TensorBoard and forwards to it, until interrupted:
// Ctrl-C ends it cleanly, with exit status 0.
func (o *Options) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := cmdutil.GetJob(ctx, o.Client, o.Namespace, o.Name); err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	p := progress.New(o.IOStreams, o.factory.Clock())
	var verdict error
	var last string
	var seen *musterv1.TrainingJob
	err := cmdutil.WatchJob(wait, o.Client, o.Namespace, o.Name, func(job *musterv1.TrainingJob) bool {
		if job == nil {
			verdict = fmt.Errorf("%s was deleted, and its TensorBoard with it", cmdutil.Ref(o.Name))
			return true
		}
		ready, msg, err := o.check(job)
		verdict, last, seen = err, msg, job
		if !ready && err == nil {
			p.Set("waiting for the TensorBoard of %s: %s", cmdutil.Ref(o.Name), msg)
		}
		return ready || err != nil
	})
	p.Done()
	switch {
	case err != nil:
		return cmdutil.JobError(err, o.Namespace, o.Name)
	case verdict != nil:
		return verdict
	case wait.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("the TensorBoard of %s is not ready after %v (%s): `muster describe %s` shows its condition, "+
			"`kubectl get pods -l %s=%s` its pod", cmdutil.Ref(o.Name), o.Timeout, last, o.Name, objects.LabelTensorBoard, o.Name)
	case ctx.Err() != nil:
		return nil
	}
	pod, err := o.readyPod(ctx, seen)
	if err != nil {
		return err
	}
	return o.Forward(ctx, pod, o.Address, o.Port, func(port uint16) {
		fmt.Fprintf(o.Out, "TensorBoard of %s: http://%s\n", cmdutil.Ref(o.Name),
			netJoin(o.Address, port))
	})
}

// check says whether the job's TensorBoard is ready, what it waits for
// otherwise, and an error when it will never be.
func (o *Options) check(job *musterv1.TrainingJob) (bool, string, error) {
	if !job.Spec.TensorBoard.Enabled() {
		return false, "", fmt.Errorf("%s has no spec.tensorboard: add one (image, logs.volume) to run a TensorBoard on its logs; see docs/api.md#tensorboard",
			cmdutil.Ref(o.Name))
	}
	c := apimeta.FindStatusCondition(job.Status.Conditions, string(musterv1.ConditionTensorBoardReady))
	switch {
	case c == nil || c.ObservedGeneration < job.Generation && c.Status != metav1.ConditionTrue:
		return false, "the operator has not made it yet", nil
	case c.Status == metav1.ConditionTrue:
		return true, "", nil
	case c.Reason == string(musterv1.ReasonTTLExpired):
		return false, "", fmt.Errorf("the TensorBoard of %s is gone: %s; remove spec.tensorboard.ttlSecondsAfterFinished before the job ends to keep it",
			cmdutil.Ref(o.Name), c.Message)
	case c.Reason == string(musterv1.ReasonInvalidSpec):
		return false, "", fmt.Errorf("the TensorBoard of %s cannot be made: %s", cmdutil.Ref(o.Name), c.Message)
	}
	// Starting, or blocked by something that may go away (a name taken, a
	// quota): wait, saying what for.
	return false, c.Message, nil
}

// readyPod is a ready pod of the job's TensorBoard: one that a ReplicaSet
// of the job's TensorBoard Deployment controls. The label alone would do
// for the operator's pods, but anyone who may make a pod in the namespace
// may give one that label, and the forward would take the user to it.
func (o *Options) readyPod(ctx context.Context, job *musterv1.TrainingJob) (*corev1.Pod, error) {
	name := objects.TensorBoardName(job)
	dep, err := o.Kube.AppsV1().Deployments(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the TensorBoard Deployment %s of %s: %w", name, cmdutil.Ref(o.Name), err)
	}
	if !metav1.IsControlledBy(dep, job) {
		return nil, fmt.Errorf("the Deployment %s is not the TensorBoard of %s: the operator does not control it", name, cmdutil.Ref(o.Name))
	}
	selector := metav1.ListOptions{LabelSelector: objects.LabelTensorBoard + "=" + o.Name}
	sets, err := o.Kube.AppsV1().ReplicaSets(o.Namespace).List(ctx, selector)
	if err != nil {
		return nil, fmt.Errorf("listing the TensorBoard ReplicaSets of %s: %w", cmdutil.Ref(o.Name), err)
	}
	ours := map[types.UID]bool{}
	for i := range sets.Items {
		if metav1.IsControlledBy(&sets.Items[i], dep) {
			ours[sets.Items[i].UID] = true
		}
	}
	pods, err := o.Kube.CoreV1().Pods(o.Namespace).List(ctx, selector)
	if err != nil {
		return nil, fmt.Errorf("listing the TensorBoard pods of %s: %w", cmdutil.Ref(o.Name), err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		owner := metav1.GetControllerOf(pod)
		if owner != nil && ours[owner.UID] && pod.DeletionTimestamp == nil && podReady(pod) {
			return pod, nil
		}
	}
	return nil, fmt.Errorf("the TensorBoard of %s is ready but none of its %d pods is: run the command again", cmdutil.Ref(o.Name), len(pods.Items))
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// netJoin is the URL host of the local end of the forward: an address
// that listens on every interface is reached on loopback, and an IPv6
// address is bracketed.
func netJoin(address string, port uint16) string {
	switch address {
	case "0.0.0.0", "":
		address = "127.0.0.1"
	case "::":
		address = "::1"
	}
	return net.JoinHostPort(address, strconv.Itoa(int(port)))
}

// apiServerForwarder forwards through the API server's pods/portforward,
// over WebSockets with a fall-back to SPDY for servers that cannot upgrade,
// as kubectl does.
func apiServerForwarder(cfg *rest.Config, kube kubernetes.Interface, streams genericiooptions.IOStreams) Forwarder {
	return func(ctx context.Context, pod *corev1.Pod, address string, local int, ready func(uint16)) error {
		req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return err
		}
		spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
		wsDialer, err := portforward.NewSPDYOverWebsocketDialer(req.URL(), cfg)
		if err != nil {
			return err
		}
		dialer := portforward.NewFallbackDialer(wsDialer, spdyDialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		stop, readyCh := make(chan struct{}), make(chan struct{})
		ports := []string{fmt.Sprintf("%d:%d", local, musterv1.TensorBoardPort)}
		fw, err := portforward.NewOnAddresses(dialer, []string{address}, ports, stop, readyCh, streams.ErrOut, streams.ErrOut)
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- fw.ForwardPorts() }()
		select {
		case <-readyCh:
			got, err := fw.GetPorts()
			if err != nil || len(got) == 0 {
				close(stop)
				return errors.Join(err, <-done)
			}
			ready(got[0].Local)
		case err := <-done:
			return fmt.Errorf("forwarding to %s: %w", pod.Name, err)
		}
		select {
		case <-ctx.Done():
			close(stop)
			return <-done
		case err := <-done:
			if err == nil {
				err = errors.New("the connection ended")
			}
			return fmt.Errorf("forwarding to %s: %w; run the command again to reach its replacement", pod.Name, err)
		}
	}
}
