package devcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestPKIAndKubeconfigs(t *testing.T) {
	c := &Config{StateDir: t.TempDir(), Ports: DefaultPorts}
	ca, err := writePKI(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKubeconfigs(c, ca); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, c.pki("ca.crt")))

	serving := parseCert(t, c.pki("apiserver.crt"))
	for _, name := range []string{"127.0.0.1", "10.96.0.1", "10.244.0.1", "kubernetes.default.svc.cluster.local", "localhost"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("serving certificate not valid for %s: %v", name, err)
		}
	}
	for _, id := range clientIdentities {
		cert := parseCert(t, c.pki(id.File+".crt"))
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: %v", id.File, err)
		}
		if cert.Subject.CommonName != id.User || strings.Join(cert.Subject.Organization, ",") != strings.Join(id.Groups, ",") {
			t.Errorf("%s: subject %v", id.File, cert.Subject)
		}
		cfg, err := clientcmd.LoadFromFile(c.componentKubeconfig(id.File))
		if err != nil {
			t.Fatal(err)
		}
		cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
		user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
		if cluster.Server != "https://127.0.0.1:16443" || cluster.InsecureSkipTLSVerify || len(cluster.CertificateAuthorityData) == 0 {
			t.Errorf("%s: cluster %+v", id.File, cluster)
		}
		if len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0 {
			t.Errorf("%s: no client credentials", id.File)
		}
	}
	if c.componentKubeconfig("admin") != c.Kubeconfig() {
		t.Error("the admin kubeconfig is not the user's")
	}
	if fi, err := os.Stat(c.pki("sa.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sa.key: %v %v", fi, err)
	}
}

func TestKubeconfigText(t *testing.T) {
	data, err := kubeconfigYAML("https://127.0.0.1:16443", []byte("CA"), keyPair{Cert: []byte("C"), Key: []byte("K")})
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		"server: https://127.0.0.1:16443",
		"certificate-authority-data: Q0E=",
		"client-certificate-data: Qw==",
		"client-key-data: Sw==",
		"current-context: muster-dev",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, text)
		}
	}
}
