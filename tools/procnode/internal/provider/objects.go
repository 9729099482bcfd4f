package provider

import (
	"context"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

// apiObjects reads ConfigMaps, Secrets and claims straight from the API
// server, so a pod never sees an informer's stale copy of an object that
// was created just before it.
type apiObjects struct{ c kubernetes.Interface }

var _ podenv.Objects = apiObjects{}

func (p *Provider) objects() apiObjects { return apiObjects{p.cfg.Client} }

func ctx10() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (o apiObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	ctx, cancel := ctx10()
	defer cancel()
	return o.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o apiObjects) Secret(ns, name string) (*corev1.Secret, error) {
	ctx, cancel := ctx10()
	defer cancel()
	return o.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o apiObjects) Claim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	ctx, cancel := ctx10()
	defer cancel()
	return o.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

// tokenCache holds the pod's service-account tokens and renews one once 80%
// of its lifetime has passed, as the kubelet's token manager does.
type tokenCache struct {
	c   kubernetes.Interface
	pod *corev1.Pod

	mu     sync.Mutex
	tokens map[tokenKey]cachedToken
}

type tokenKey struct {
	audience string
	seconds  int64
}

type cachedToken struct {
	token   string
	renewAt time.Time
}

func newTokenCache(c kubernetes.Interface, pod *corev1.Pod) *tokenCache {
	return &tokenCache{c: c, pod: pod, tokens: map[tokenKey]cachedToken{}}
}

func (t *tokenCache) get(audience string, seconds int64) (string, error) {
	k := tokenKey{audience, seconds}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ct, ok := t.tokens[k]; ok && time.Now().Before(ct.renewAt) {
		return ct.token, nil
	}
	sa := t.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: t.pod.Name, UID: t.pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	ctx, cancel := ctx10()
	defer cancel()
	issued := time.Now()
	resp, err := t.c.CoreV1().ServiceAccounts(t.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	life := resp.Status.ExpirationTimestamp.Sub(issued)
	t.tokens[k] = cachedToken{token: resp.Status.Token, renewAt: issued.Add(life * 8 / 10)}
	return resp.Status.Token, nil
}
