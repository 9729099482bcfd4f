package clitest

import (
	"io"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	fakerest "k8s.io/client-go/rest/fake"
)

// LogsFunc is a pod's log, as the API server would return it for opts.
type LogsFunc func(namespace, pod string, opts *corev1.PodLogOptions) string

// The fake clientset answers every log request with "fake logs", without
// knowing which pod was asked for: these wrappers answer per pod.
type kubeWithLogs struct {
	*fakeClientset
	logs LogsFunc
}

type fakeClientset = kubernetesFake

func (k kubeWithLogs) CoreV1() corev1client.CoreV1Interface {
	return coreWithLogs{CoreV1Interface: k.fakeClientset.CoreV1(), logs: k.logs}
}

type coreWithLogs struct {
	corev1client.CoreV1Interface
	logs LogsFunc
}

func (c coreWithLogs) Pods(namespace string) corev1client.PodInterface {
	return podsWithLogs{PodInterface: c.CoreV1Interface.Pods(namespace), namespace: namespace, logs: c.logs}
}

type podsWithLogs struct {
	corev1client.PodInterface
	namespace string
	logs      LogsFunc
}

func (p podsWithLogs) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	body := p.logs(p.namespace, name, opts)
	c := &fakerest.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         corev1.SchemeGroupVersion,
		VersionedAPIPath:     "/api/v1",
		Client: fakerest.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body))}, nil
		}),
	}
	return c.Request()
}

var _ kubernetes.Interface = kubeWithLogs{}
