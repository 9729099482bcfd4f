package devcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Kueue runs as a host process; the API server calls its webhooks (admission
// and CRD conversion) by URL on 127.0.0.1. Their TLS is Kueue's own
// internal certificate management with a certificate made here: Kueue's cert
// rotator keeps the certificate it finds in its Secret while that is valid
// for its service name, so the Secret is seeded with one that is also valid
// for 127.0.0.1, signed by a CA of Kueue's name, and the same files are put
// where its webhook server reads them (in a pod, the Secret's volume). The
// rotator then injects that CA into the webhook configurations and CRDs,
// which name it already. (Turning internal certificate management off
// instead makes Kueue read its metrics certificate from a fixed path under
// /etc.)

// Names Kueue's default configuration and manifests use.
const (
	kueueNamespace      = "kueue-system"
	kueueWebhookService = "kueue-webhook-service"
	kueueCertSecret     = "kueue-webhook-server-cert"
	// kueueNamePrefix is what Kueue's kustomization puts before its objects'
	// names; the rotator finds the webhook configurations by these names.
	kueueNamePrefix = "kueue-"
	// kueueCAName is the name the rotator expects its CA to be valid for.
	kueueCAName = "kueue-ca"
)

func (c *Config) kueueDir() string        { return c.path("kueue") }
func (c *Config) kueueConfigFile() string { return c.path("kueue", "config.yaml") }
func (c *Config) kueueCertDir() string    { return c.path("kueue", "certs") }
func (c *Config) kueueWebhookURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.KueueWebhook)
}

// kueueConfig is Kueue's Configuration: every listener on loopback (no
// metrics server, no visibility API server), no leader election (one
// replica), and the batch/v1 Job integration, which a quick check of the
// cluster can use.
func (c *Config) kueueConfig() string {
	return strings.Join([]string{
		"apiVersion: config.kueue.x-k8s.io/v1beta2",
		"kind: Configuration",
		"namespace: " + kueueNamespace,
		"health:",
		fmt.Sprintf("  healthProbeBindAddress: 127.0.0.1:%d", c.Ports.KueueHealth),
		"metrics:",
		`  bindAddress: "0"`,
		"webhook:",
		"  host: 127.0.0.1",
		fmt.Sprintf("  port: %d", c.Ports.KueueWebhook),
		"  certDir: " + c.kueueCertDir(),
		"leaderElection:",
		"  leaderElect: false",
		"internalCertManagement:",
		"  enable: true",
		"  webhookServiceName: " + kueueWebhookService,
		"  webhookSecretName: " + kueueCertSecret,
		"clientConnection:",
		"  qps: 200",
		"  burst: 400",
		"featureGates:",
		// It serves an aggregated API on all interfaces.
		"  VisibilityOnDemand: false",
		// Elastic TrainingJobs grow through workload slices (alpha).
		"  ElasticJobsViaWorkloadSlices: true",
		"integrations:",
		"  frameworks:",
		"  - batch/job",
		// Muster makes the Workloads of TrainingJobs itself.
		"  externalFrameworks:",
		"  - " + kueueExternalFramework,
		"",
	}, "\n")
}

// kueueExternalFramework is how Kueue's configuration names TrainingJobs,
// whose Workloads the Muster operator makes (internal/queue/kueue).
const kueueExternalFramework = "TrainingJob.v1beta1.muster.dev"

func (c *Config) kueueComponent(bin string) component {
	return component{
		name: "kueue",
		bin:  bin,
		args: []string{
			"--config=" + c.kueueConfigFile(),
			"--kubeconfig=" + c.componentKubeconfig("kueue"),
		},
		addr:   c.kueueWebhookURL(),
		listen: []listenAddr{tcp(c.Ports.KueueHealth), tcp(c.Ports.KueueWebhook)},
		ready:  httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", c.Ports.KueueHealth)),
	}
}

// kueuePKI is the CA and serving certificate of Kueue's webhooks, in the
// files and key formats of Kueue's cert rotator (PKCS#1 RSA keys).
func kueuePKI(now time.Time) (map[string][]byte, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: kueueCAName, Organization: []string{"muster-dev"}},
		DNSNames:              []string{kueueCAName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	// The rotator renews what expires within 90 days; this lasts years.
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: kueueWebhookService + "." + kueueNamespace + ".svc"},
		DNSNames:     []string{kueueWebhookService + "." + kueueNamespace + ".svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(5, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, err
	}
	rsaPEM := func(k *rsa.PrivateKey) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	return map[string][]byte{
		"ca.crt":  encodeCert(caDER),
		"ca.key":  rsaPEM(caKey),
		"tls.crt": encodeCert(der),
		"tls.key": rsaPEM(key),
	}, nil
}

// ensureKueuePKI makes Kueue's certificates once per state dir and returns
// them.
func (c *Config) ensureKueuePKI() (map[string][]byte, error) {
	names := []string{"ca.crt", "ca.key", "tls.crt", "tls.key"}
	files := map[string][]byte{}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(c.kueueCertDir(), n))
		if err != nil {
			files = nil
			break
		}
		files[n] = data
	}
	if files != nil {
		return files, nil
	}
	files, err := kueuePKI(time.Now())
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := writeFile(filepath.Join(c.kueueCertDir(), n), files[n], 0o600); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// installKueue creates Kueue's namespace, its certificate Secret and its
// CRDs (with conversion by URL), and waits until they are served.
func (c *Config) installKueue(ctx context.Context) error {
	pki, err := c.ensureKueuePKI()
	if err != nil {
		return err
	}
	dir, err := c.moduleDir(ctx, "kueue", kueueModule)
	if err != nil {
		return err
	}
	crds, err := kueueCRDs(filepath.Join(dir, "config", "components", "crd"), c.kueueWebhookURL(), pki["ca.crt"])
	if err != nil {
		return err
	}
	secret, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": kueueCertSecret, "namespace": kueueNamespace},
		"type":     "Opaque",
		"data":     pki, // []byte marshals as base64, as Secret data is
	})
	if err != nil {
		return err
	}
	manifest := joinDocs([]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+kueueNamespace+"\n"), secret, crds)
	path := filepath.Join(c.kueueDir(), "install.yaml")
	if err := writeFile(path, manifest, 0o600); err != nil {
		return err
	}
	if err := c.kubectlApply(ctx, path); err != nil {
		return err
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	return waitServed(ctx, cs, time.Minute,
		"workloads.kueue.x-k8s.io/v1beta2", "clusterqueues.kueue.x-k8s.io/v1beta2",
		"localqueues.kueue.x-k8s.io/v1beta2", "resourceflavors.kueue.x-k8s.io/v1beta2")
}

// installKueueWebhooks registers Kueue's admission webhooks once Kueue
// serves them (before that, every create they cover would fail), then waits
// until one answers.
func (c *Config) installKueueWebhooks(ctx context.Context) error {
	pki, err := c.ensureKueuePKI()
	if err != nil {
		return err
	}
	dir, err := c.moduleDir(ctx, "kueue", kueueModule)
	if err != nil {
		return err
	}
	hooks, err := kueueWebhooks(filepath.Join(dir, "config", "components", "webhook"), c.kueueWebhookURL(), pki["ca.crt"])
	if err != nil {
		return err
	}
	path := filepath.Join(c.kueueDir(), "webhooks.yaml")
	if err := writeFile(path, hooks, 0o600); err != nil {
		return err
	}
	if err := c.kubectlApply(ctx, path); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := poll(ctx, c.kueueWebhookAnswers); err != nil {
		return fmt.Errorf("kueue's webhooks do not answer: %w", err)
	}
	c.logf("%-24s webhooks answering at %s", "kueue", c.kueueWebhookURL())
	return nil
}

// removeKueueWebhooks unregisters Kueue's webhooks when up stops a Kueue it
// started in a cluster that goes on running: with nobody answering them,
// they would refuse every Job and Pod create they cover.
func (c *Config) removeKueueWebhooks(ctx context.Context) {
	cs, err := c.clientset()
	if err != nil {
		c.logf("WARNING: cannot remove kueue's webhooks: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	arv1 := cs.AdmissionregistrationV1()
	for _, err := range []error{
		arv1.MutatingWebhookConfigurations().Delete(ctx, kueueNamePrefix+"mutating-webhook-configuration", metav1.DeleteOptions{}),
		arv1.ValidatingWebhookConfigurations().Delete(ctx, kueueNamePrefix+"validating-webhook-configuration", metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			c.logf("WARNING: removing kueue's webhooks: %v", err)
		}
	}
}

// kueueProbe is a ResourceFlavor created only as a server-side dry run: it
// passes Kueue's mutating and validating webhooks and stores nothing.
const kueueProbe = `apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: muster-dev-webhook-probe}
`

func (c *Config) kueueWebhookAnswers(ctx context.Context) error {
	bins, err := c.clusterBinaries()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bins.Kubectl(), "--kubeconfig="+c.Kubeconfig(), "create", "--dry-run=server", "-f", "-")
	cmd.Stdin = strings.NewReader(kueueProbe)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// kustomization is the part of a kustomization.yaml read here.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path  string `json:"path"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

func readKustomization(dir string) (kustomization, error) {
	var k kustomization
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return k, err
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return k, fmt.Errorf("%s: %w", filepath.Join(dir, "kustomization.yaml"), err)
	}
	return k, nil
}

// urlClientConfig turns a webhook clientConfig that names a Service into
// one that calls base + the service's path, trusting ca.
func urlClientConfig(clientConfig any, base string, ca []byte) (map[string]any, error) {
	cc, _ := clientConfig.(map[string]any)
	svc, _ := cc["service"].(map[string]any)
	path, _ := svc["path"].(string)
	if svc == nil || path == "" {
		return nil, fmt.Errorf("clientConfig %v names no service path", clientConfig)
	}
	return map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(ca)}, nil
}

// kueueCRDs are the CRDs of Kueue's crd folder (its kustomization's
// resources) with the conversion webhooks its patches add, called by URL.
func kueueCRDs(dir, base string, ca []byte) ([]byte, error) {
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	conversions := map[string]map[string]any{}
	for _, p := range k.Patches {
		if p.Path == "" {
			continue
		}
		docs, err := readDocs(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			name := nested(d, "metadata", "name")
			conv, _ := nestedMap(d, "spec")["conversion"].(map[string]any)
			if name == "" || conv == nil {
				continue
			}
			if wh, ok := conv["webhook"].(map[string]any); ok {
				if wh["clientConfig"], err = urlClientConfig(wh["clientConfig"], base, ca); err != nil {
					return nil, fmt.Errorf("%s: %w", p.Path, err)
				}
			}
			conversions[name] = conv
		}
	}
	var out [][]byte
	for _, r := range k.Resources {
		docs, err := readDocs(filepath.Join(dir, r))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if conv, ok := conversions[nested(d, "metadata", "name")]; ok {
				nestedMap(d, "spec")["conversion"] = conv
			}
			data, err := yaml.Marshal(d)
			if err != nil {
				return nil, err
			}
			out = append(out, data)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", dir)
	}
	return joinDocs(out...), nil
}

// kueueWebhooks are the webhook configurations of Kueue's webhook folder,
// with the names and namespace selectors its kustomization gives them,
// called by URL.
func kueueWebhooks(dir, base string, ca []byte) ([]byte, error) {
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	var configs []map[string]any
	for _, r := range k.Resources {
		docs, err := readDocs(filepath.Join(dir, r))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if kind, _ := d["kind"].(string); strings.HasSuffix(kind, "WebhookConfiguration") {
				configs = append(configs, d)
			}
		}
	}
	for _, p := range k.Patches {
		if p.Patch == "" {
			continue
		}
		if err := patchWebhooks(configs, p.Patch); err != nil {
			return nil, fmt.Errorf("a patch in %s: %w", dir, err)
		}
	}
	var out [][]byte
	for _, cfg := range configs {
		nestedMap(cfg, "metadata")["name"] = kueueNamePrefix + nested(cfg, "metadata", "name")
		for _, w := range items(cfg["webhooks"]) {
			if w["clientConfig"], err = urlClientConfig(w["clientConfig"], base, ca); err != nil {
				return nil, fmt.Errorf("webhook %v: %w", w["name"], err)
			}
		}
		data, err := yaml.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no webhook configurations in %s", dir)
	}
	return joinDocs(out...), nil
}

// patchWebhooks applies an inline strategic-merge patch of a webhook
// configuration: the fields of each webhook it lists, matched by name.
func patchWebhooks(configs []map[string]any, patchYAML string) error {
	var patch map[string]any
	if err := yaml.Unmarshal([]byte(patchYAML), &patch); err != nil {
		return err
	}
	for _, cfg := range configs {
		if cfg["kind"] != patch["kind"] || nested(cfg, "metadata", "name") != nested(patch, "metadata", "name") {
			continue
		}
		for _, pw := range items(patch["webhooks"]) {
			for _, w := range items(cfg["webhooks"]) {
				if w["name"] == pw["name"] {
					maps.Copy(w, pw)
				}
			}
		}
	}
	return nil
}

// readDocs parses every non-empty YAML document of a file.
func readDocs(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []map[string]any
	for _, part := range splitDocs(data) {
		var d map[string]any
		if err := yaml.Unmarshal(part, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// splitDocs splits a YAML stream at its "---" lines.
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimSpace(line); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

func joinDocs(docs ...[]byte) []byte {
	var b bytes.Buffer
	for _, d := range docs {
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		b.Write(d)
		if len(d) > 0 && d[len(d)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func nestedMap(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	if v == nil {
		v = map[string]any{}
		m[key] = v
	}
	return v
}

func nested(m map[string]any, keys ...string) string {
	for _, k := range keys[:len(keys)-1] {
		m, _ = m[k].(map[string]any)
	}
	s, _ := m[keys[len(keys)-1]].(string)
	return s
}

func items(v any) []map[string]any {
	list, _ := v.([]any)
	var out []map[string]any
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
