package devcluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ContextName is the kubeconfig context (and cluster) name of the dev cluster.
const ContextName = "muster-dev"

// kubeconfigYAML is a self-contained kubeconfig (certificates inlined) that
// verifies the API server against the cluster's CA.
func kubeconfigYAML(server string, caPEM []byte, user keyPair) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{ClientCertificateData: user.Cert, ClientKeyData: user.Key}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName}
	cfg.CurrentContext = ContextName
	return clientcmd.Write(*cfg)
}

func (c *Config) apiServerURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIServer)
}

// componentKubeconfig is the kubeconfig file of one client identity.
func (c *Config) componentKubeconfig(file string) string {
	if file == "admin" {
		return c.Kubeconfig()
	}
	return c.path("kubeconfigs", file+".kubeconfig")
}

// writeKubeconfigs writes a kubeconfig per client identity; the admin one
// is the user's (<state>/kubeconfig).
func writeKubeconfigs(c *Config, ca *certAuthority) error {
	for _, id := range clientIdentities {
		kp, err := readKeyPair(c.pki(id.File + ".crt"))
		if err != nil {
			return err
		}
		data, err := kubeconfigYAML(c.apiServerURL(), ca.certPEM, kp)
		if err != nil {
			return err
		}
		if err := writeFile(c.componentKubeconfig(id.File), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func readKeyPair(certFile string) (keyPair, error) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return keyPair{}, err
	}
	key, err := os.ReadFile(certFile[:len(certFile)-len(".crt")] + ".key")
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{Cert: cert, Key: key}, nil
}

// RESTConfig is the admin client configuration of the running cluster.
func (c *Config) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
