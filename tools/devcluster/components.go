package devcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// insecureHTTP reads health endpoints. Only kube-apiserver's readiness is
// checked with the cluster CA and an admin identity; the others serve
// /healthz to anyone over self-signed TLS.
var insecureHTTP = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

func (c *Config) etcdComponent(dir string) component {
	return component{
		name:   "etcd",
		bin:    filepath.Join(dir, "etcd"),
		args:   c.etcdArgs(),
		addr:   c.etcdURL(c.Ports.EtcdClient),
		listen: []listenAddr{tcp(c.Ports.EtcdClient), tcp(c.Ports.EtcdPeer)},
		ready:  httpOK(c.etcdURL(c.Ports.EtcdClient) + "/health"),
	}
}

func (c *Config) apiServerComponent(dir string) component {
	return component{
		name:   "kube-apiserver",
		bin:    filepath.Join(dir, "kube-apiserver"),
		args:   c.apiServerArgs(),
		addr:   c.apiServerURL(),
		listen: []listenAddr{tcp(c.Ports.APIServer)},
		ready: func(ctx context.Context) error {
			cs, err := c.clientset()
			if err != nil {
				return err
			}
			body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Timeout(2 * time.Second).DoRaw(ctx)
			if err != nil && len(body) > 0 {
				return fmt.Errorf("readyz: %s", failingChecks(string(body)))
			}
			return err
		},
	}
}

func (c *Config) controllerManagerComponent(dir string) component {
	return component{
		name:   "kube-controller-manager",
		bin:    filepath.Join(dir, "kube-controller-manager"),
		args:   c.controllerManagerArgs(),
		addr:   fmt.Sprintf("https://127.0.0.1:%d", c.Ports.ControllerManager),
		listen: []listenAddr{tcp(c.Ports.ControllerManager)},
		ready:  httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.ControllerManager)),
	}
}

func (c *Config) schedulerComponent(dir string) component {
	return component{
		name:   "kube-scheduler",
		bin:    filepath.Join(dir, "kube-scheduler"),
		args:   c.schedulerArgs(),
		addr:   fmt.Sprintf("https://127.0.0.1:%d", c.Ports.Scheduler),
		listen: []listenAddr{tcp(c.Ports.Scheduler)},
		ready:  httpOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", c.Ports.Scheduler)),
	}
}

func (c *Config) clientset() (*kubernetes.Clientset, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// failingChecks keeps the "[-]name failed" lines of a /readyz answer.
func failingChecks(body string) string {
	var failed []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "[-]"); ok {
			failed = append(failed, strings.Fields(name)[0])
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body)
	}
	return "waiting for " + strings.Join(failed, ", ")
}
