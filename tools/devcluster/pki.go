package devcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certAuthority signs every certificate of one cluster. A fresh one is made
// per `up` (down removes it), so nothing outlives the cluster it belongs to.
type certAuthority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// keyPair is a PEM certificate and its PEM private key.
type keyPair struct {
	Cert, Key []byte
}

// clientIdentity is who a component is to the API server: the certificate's
// CN is the user and O the groups.
type clientIdentity struct {
	File   string
	User   string
	Groups []string
}

// clientIdentities are the cluster's client certificates. The control-plane
// components use the users their built-in RBAC bindings expect; the dev
// helpers (DNS, nodes) act as cluster admins, as a kubelet-like agent with
// volume provisioning would need broad rights anyway.
var clientIdentities = []clientIdentity{
	{"admin", "muster-dev-admin", []string{"system:masters"}},
	{"kube-controller-manager", "system:kube-controller-manager", nil},
	{"kube-scheduler", "system:kube-scheduler", nil},
	{"coredns", "muster-dev-coredns", []string{"system:masters"}},
	{"kwok", "muster-dev-kwok", []string{"system:masters"}},
	{"procnode", "system:node:" + ProcNodeName, []string{"system:nodes", "system:masters"}},
	{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
	{"front-proxy-client", frontProxyUser, nil},
	// The optional components read and write their own CRDs and more.
	{"coscheduling", "muster-dev-coscheduling", []string{"system:masters"}},
	{"volcano", "muster-dev-volcano", []string{"system:masters"}},
	{"kueue", "muster-dev-kueue", []string{"system:masters"}},
}

// frontProxyUser is the only client whose X-Remote-User headers the API
// server trusts. It shares the cluster CA (kubeadm uses a second one) since
// the allowed name already pins it; without a request-header CA the
// controller manager and scheduler log an error every few seconds.
const frontProxyUser = "front-proxy-client"

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func newCA(now time.Time) (*certAuthority, []byte, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "muster-dev-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &certAuthority{cert: cert, key: key, certPEM: encodeCert(der)}, keyPEM, nil
}

// issue signs a leaf certificate. Server certificates get the SANs; client
// certificates carry the identity in the subject.
func (ca *certAuthority) issue(now time.Time, cn string, orgs []string, server bool, ips []net.IP, dns []string) (keyPair, error) {
	key, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{Cert: encodeCert(der), Key: keyPEM}, nil
}

// apiServerSANs are the names a client may dial the API server by: the
// loopback address from the host, and the kubernetes Service's IP and DNS
// names plus the pod bridge's gateway from inside pods.
func apiServerSANs() ([]net.IP, []string) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), firstIP(ServiceCIDR), firstIP(PodCIDR)}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + ClusterDomain}
	return ips, dns
}

// firstIP is the .1 address of a CIDR (the kubernetes Service, the gateway).
func firstIP(cidr string) net.IP {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
}

// writePKI creates the CA, the API server's serving certificate, the
// service-account signing key and every client certificate under <state>/pki.
func writePKI(c *Config) (*certAuthority, error) {
	now := time.Now()
	ca, caKey, err := newCA(now)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.crt": ca.certPEM, "ca.key": caKey}
	ips, dns := apiServerSANs()
	serving, err := ca.issue(now, "kube-apiserver", nil, true, ips, dns)
	if err != nil {
		return nil, err
	}
	files["apiserver.crt"], files["apiserver.key"] = serving.Cert, serving.Key
	for _, id := range clientIdentities {
		kp, err := ca.issue(now, id.User, id.Groups, false, nil, nil)
		if err != nil {
			return nil, err
		}
		files[id.File+".crt"], files[id.File+".key"] = kp.Cert, kp.Key
	}
	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	if files["sa.key"], err = encodeKey(saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, data := range files {
		if err := writeFile(c.pki(name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return ca, nil
}

// ensureClientIdentities issues, from the CA in the state dir, the client
// certificates and kubeconfigs missing there: a cluster started before an
// identity was added gets it on its next up.
func ensureClientIdentities(c *Config) error {
	var ca *certAuthority
	now := time.Now()
	for _, id := range clientIdentities {
		if _, err := os.Stat(c.componentKubeconfig(id.File)); err == nil {
			continue
		}
		if ca == nil {
			var err error
			if ca, err = readCA(c); err != nil {
				return err
			}
		}
		kp, err := ca.issue(now, id.User, id.Groups, false, nil, nil)
		if err != nil {
			return err
		}
		if err := writeFile(c.pki(id.File+".crt"), kp.Cert, 0o600); err != nil {
			return err
		}
		if err := writeFile(c.pki(id.File+".key"), kp.Key, 0o600); err != nil {
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

// readCA loads the cluster CA that writePKI wrote.
func readCA(c *Config) (*certAuthority, error) {
	certPEM, err := os.ReadFile(c.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(c.pki("ca.key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s or %s holds no PEM block", c.pki("ca.crt"), c.pki("ca.key"))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key, certPEM: certPEM}, nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(fmt.Sprintf("reading randomness: %v", err))
	}
	return n
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}
