// Package cmdutil is what every verb of the muster command shares: the
// clients, made once from the kubectl connection flags; the output flags;
// the errors that say what to do; job-name completion.
package cmdutil

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/muster-dev/muster/api/v1alpha1"
	musterv1 "github.com/muster-dev/muster/api/v1beta1"

	// Exec and OIDC credential plugins, as kubectl has them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

// Scheme knows the Kubernetes types and the TrainingJob: the printers set
// apiVersion and kind from it, and create decodes manifests with it.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(clientgoscheme.AddToScheme(s))
	utilruntimeMust(musterv1.AddToScheme(s))
	utilruntimeMust(v1alpha1.AddToScheme(s))
	return s
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

// Factory gives a verb its clients and the namespace to work in.
type Factory interface {
	genericclioptions.RESTClientGetter
	// Client reads and writes TrainingJobs, and watches them.
	Client() (client.WithWatch, error)
	// KubeClient reads pods, their logs and events.
	KubeClient() (kubernetes.Interface, error)
	// Namespace is --namespace, else the context's, else "default";
	// explicit is whether --namespace was given.
	Namespace() (ns string, explicit bool, err error)
	// Clock tells ages and bounds waits.
	Clock() clock.WithTicker
}

// NewFactory makes clients from the kubectl connection flags, once.
func NewFactory(flags *genericclioptions.ConfigFlags, clk clock.WithTicker) Factory {
	return &factory{RESTClientGetter: flags, flags: flags, clock: clk}
}

type factory struct {
	genericclioptions.RESTClientGetter
	flags *genericclioptions.ConfigFlags
	clock clock.WithTicker

	once sync.Once
	cfg  *rest.Config
	err  error
}

// ToRESTConfig is the flags' config, with an error that says how to point
// the command at a cluster when there is none.
func (f *factory) ToRESTConfig() (*rest.Config, error) {
	f.once.Do(func() {
		if f.noCluster() {
			f.err = ErrNoCluster
			return
		}
		f.cfg, f.err = f.RESTClientGetter.ToRESTConfig()
		if clientcmd.IsEmptyConfig(f.err) {
			f.err = ErrNoCluster
		} else if f.err != nil {
			f.err = fmt.Errorf("loading kubeconfig: %w", f.err)
		}
	})
	return f.cfg, f.err
}

// noCluster is whether nothing names a cluster: no kubeconfig with one,
// no --server, not in a pod. kubectl's flags then fall back to
// localhost:8080, whose refused connection says nothing useful.
func (f *factory) noCluster() bool {
	if f.flags.APIServer != nil && *f.flags.APIServer != "" {
		return false
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return false
	}
	raw, err := f.ToRawKubeConfigLoader().RawConfig()
	return err == nil && len(raw.Clusters) == 0
}

// ErrNoCluster replaces client-go's message for an empty configuration,
// which speaks of KUBERNETES_MASTER, with what does point muster at a
// cluster.
var ErrNoCluster = errors.New("no cluster configured: point muster at one with --kubeconfig FILE (and --context NAME), " +
	"or set KUBECONFIG; for Muster's local cluster run: eval \"$(muster-dev env)\"")

func (f *factory) Client() (client.WithWatch, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: Scheme})
}

func (f *factory) KubeClient() (kubernetes.Interface, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func (f *factory) Namespace() (string, bool, error) {
	return f.ToRawKubeConfigLoader().Namespace()
}

func (f *factory) Clock() clock.WithTicker { return f.clock }
