package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// clientFlags are the connection flags every cluster verb shares.
type clientFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

func newClientFlags(root *cobra.Command) *clientFlags {
	cf := &clientFlags{}
	pf := root.PersistentFlags()
	pf.StringVar(&cf.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	pf.StringVar(&cf.context, "context", "", "kubeconfig context to use")
	pf.StringVarP(&cf.namespace, "namespace", "n", "", "namespace (default: the context's)")
	return cf
}

func (cf *clientFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cf.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cf.context})
}

// restConfig loads the kubeconfig and resolves the namespace.
func (cf *clientFlags) restConfig() (*rest.Config, string, error) {
	loader := cf.loader()
	cfg, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own message speaks of KUBERNETES_MASTER, which
		// nobody sets any more: say what does point muster at a cluster.
		return nil, "", errors.New("no cluster configured: set KUBECONFIG or pass --kubeconfig (and --context), " +
			`or for the local cluster run eval "$(go run ./tools/musterdev env)" in a Muster checkout`)
	}
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns := cf.namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil {
			return nil, "", err
		}
	}
	return cfg, ns, nil
}

// client connects to the cluster and resolves the namespace.
func (cf *clientFlags) client() (client.Client, string, error) {
	cfg, ns, err := cf.restConfig()
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := musterv1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, ns, err
}

// job connects and reads one TrainingJob of the namespace.
func (cf *clientFlags) job(ctx context.Context, name string) (client.Client, *musterv1.TrainingJob, error) {
	c, ns, err := cf.client()
	if err != nil {
		return nil, nil, err
	}
	job := &musterv1.TrainingJob{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		return nil, nil, err
	}
	return c, job, nil
}
