package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The floor's client is a ServiceAccount's, as the operator's is: the API
// server's priority and fairness puts both in the same level
// (workload-low, through the service-accounts flow schema), where an
// admin's certificate would be exempt from it.
const (
	floorNamespace      = "bench-floor"
	floorServiceAccount = "floor"
)

// setUpFloors makes what the floors' clients need before any is measured:
// their ServiceAccount and kubeconfig, and the object floors' CRDs.
func (b *bench) setUpFloors(ctx context.Context, rest *rest.Config) error {
	var err error
	if b.floorConfig, err = b.floorKubeconfig(ctx, rest); err != nil {
		return fmt.Errorf("the floor's ServiceAccount: %w", err)
	}
	if b.floorCS, err = floorClient(b.floorConfig); err != nil {
		return err
	}
	return b.installFloorCRDs(ctx, rest)
}

// floorKubeconfig makes the floor's ServiceAccount, lets it do anything
// (as the operator may do what it needs), and writes a kubeconfig with a
// token for it.
func (b *bench) floorKubeconfig(ctx context.Context, rest *rest.Config) (string, error) {
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: floorServiceAccount}}
	if _, err := b.cs.CoreV1().ServiceAccounts(floorNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-floor"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: floorServiceAccount, Namespace: floorNamespace}},
	}
	if _, err := b.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	tok, err := b.cs.CoreV1().ServiceAccounts(floorNamespace).CreateToken(ctx, floorServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(24 * 3600))}},
		metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	ca := rest.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(rest.CAFile); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: rest.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["floor"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["floor"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "floor"}
	kc.CurrentContext = "floor"
	path := filepath.Join(b.cfg.StateDir, "floor.kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// installFloorCRDs installs the object floors' CRDs: F1's minimal one
// (status subresource, no schema beyond an object, no CEL, no webhook) and
// F1s's, Muster's v1beta1 schema with its CEL rules under another group.
func (b *bench) installFloorCRDs(ctx context.Context, rest *rest.Config) error {
	ext, err := apiextensionsclient.NewForConfig(rest)
	if err != nil {
		return err
	}
	anything := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}
	f1 := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: f1Resource.Resource + "." + f1Resource.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: f1Resource.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: f1Resource.Resource, Singular: "floorjob", Kind: "FloorJob", ListKind: "FloorJobList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: f1Resource.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": anything, "status": anything},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	f1s, err := musterSchemaElsewhere(b.cfg.Root)
	if err != nil {
		return err
	}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{f1, f1s} {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing %s: %w", crd.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}

// musterSchemaElsewhere is Muster's CRD, its served v1beta1 alone, under
// F1s's group, without the conversion webhook that only serves v1alpha1.
func musterSchemaElsewhere(root string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "muster.dev_trainingjobs.yaml"))
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return nil, err
	}
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name == f1sResource.Version {
			v.Storage = true
			versions = append(versions, v)
		}
	}
	if len(versions) != 1 {
		return nil, fmt.Errorf("muster's CRD has no %s", f1sResource.Version)
	}
	crd.Spec.Versions = versions
	crd.Spec.Conversion = nil
	crd.Spec.Group = f1sResource.Group
	crd.Name = f1sResource.Resource + "." + f1sResource.Group
	crd.ResourceVersion, crd.Annotations = "", nil
	return crd, nil
}

// floorSpec writes the spec of a job of perJob pods as Muster's webhook
// defaults it (a dry-run create), for the object floors to write into their
// objects, and returns its file.
func (b *bench) floorSpec(ctx context.Context, perJob int) (string, error) {
	path := filepath.Join(b.cfg.StateDir, fmt.Sprintf("floor-spec-%d.json", perJob))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	job := benchJob("default", "spec", perJob)
	if err := b.c.Create(ctx, job, client.DryRunAll); err != nil {
		return "", err
	}
	raw, err := json.Marshal(map[string]any{"spec": job.Spec})
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, raw, 0o644)
}

// floorProcess is a floor client running, seen from the bench.
type floorProcess struct {
	cmd     *exec.Cmd
	in      *bufio.Writer
	closeIn func() error
	out     *bufio.Scanner
	stderr  strings.Builder
}

// startFloor starts a floor client and waits until it is ready to go.
func startFloor(ctx context.Context, a floorArgs) (*floorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &floorProcess{cmd: exec.CommandContext(ctx, self, a.argv()...)}
	p.cmd.Stderr = &p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.in, p.closeIn = bufio.NewWriter(in), in.Close
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(out)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	if err := p.expect("ready"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *floorProcess) pid() int { return p.cmd.Process.Pid }

// say sends a line to the client and waits for its answer.
func (p *floorProcess) say(line, answer string) error {
	if _, err := p.in.WriteString(line + "\n"); err != nil {
		return err
	}
	if err := p.in.Flush(); err != nil {
		return err
	}
	return p.expect(answer)
}

func (p *floorProcess) expect(want string) error {
	if !p.out.Scan() {
		return fmt.Errorf("the floor's client ended: %s", strings.TrimSpace(p.stderr.String()))
	}
	if got := p.out.Text(); got != want {
		return fmt.Errorf("the floor's client: %s", got)
	}
	return nil
}

// stop closes the client's input and waits for it to end.
func (p *floorProcess) stop() {
	_ = p.closeIn()
	_ = p.cmd.Wait()
}

// floorSide runs one floor's side of a scenario into out.
func (b *bench) floorSide(ctx context.Context, s *scenario, kind sideKind, ns string, out *side) error {
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	a := floorArgs{kind: kind, ns: ns, jobs: s.jobs, perJob: s.perJob, kubeconfig: b.floorConfig, floorPods: b.o.floorPods}
	if kind.objectFloor() {
		var err error
		if a.spec, err = b.floorSpec(ctx, s.perJob); err != nil {
			return err
		}
	}
	p, err := startFloor(ctx, a)
	if err != nil {
		return err
	}
	defer p.stop()
	// Its CPU is counted while it runs, beside the operator's.
	b.procs[floorClientName] = process{p.pid()}
	defer delete(b.procs, floorClientName)
	if err := b.measure(ctx, ns, s.jobs*s.perJob, out, false, func() error { return p.say("go", "created") }); err != nil {
		return err
	}
	if err := b.replacements(ctx, s, kind, ns, out); err != nil {
		return err
	}
	// The client stops replacing pods but goes on releasing its finalizers
	// while the namespace goes, as the operator does.
	if err := p.say("drain", "drained"); err != nil {
		return err
	}
	if kind.builtIn() {
		stop := make(chan struct{})
		defer close(stop)
		go b.failDeleted(ctx, ns, stop)
	}
	return b.deleteNamespace(ctx, ns)
}

// failDeleted plays the kubelet for the Job controller's pods while their
// namespace goes: each pod deleted but held by the Job controller's
// finalizer is reported Failed, once a second, until stop. See lose.
func (b *bench) failDeleted(ctx context.Context, ns string, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		pods, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil && p.Status.Phase == corev1.PodRunning {
					_ = b.reportFailed(ctx, p)
				}
			}
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func (b *bench) reportFailed(ctx context.Context, pod *corev1.Pod) error {
	_, err := b.cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType,
		[]byte(`{"status":{"phase":"Failed"}}`), metav1.PatchOptions{}, "status")
	return err
}

// floorClientName is the floor's client among the measured processes.
const floorClientName = "floor client"

// taskPod is the name of the pod of job's task index in ns: by name, but
// for the Job controller's pods, whose names end in a random suffix.
func (b *bench) taskPod(ctx context.Context, kind sideKind, ns, job string, index int) (*corev1.Pod, error) {
	indexLabel := jobIndexLabel
	switch {
	case kind.namesAttempts():
		indexLabel = floorTaskIndexLabel
	case !kind.builtIn():
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job + "-worker-" + strconv.Itoa(index)}}, nil
	}
	pods, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=%s,%s=%d", jobLabel, job, indexLabel, index)})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no pod of %s/%s index %d", ns, job, index)
}

// jobIndexLabel is the index the Job controller labels an Indexed Job's
// pods with.
const jobIndexLabel = "batch.kubernetes.io/job-completion-index"

// lose deletes a task's pod at once (grace 0), as a node lost or a process
// killed leaves it. A Job's pod, which the Job controller's finalizer
// holds, is then reported Failed, as its node's kubelet would once it has
// stopped its containers: the Job controller replaces only failed pods
// here, and KWOK finishes no pod deleted with grace 0 (see devcluster's
// stages). That write is the node's, counted with the floor's.
func (b *bench) lose(ctx context.Context, kind sideKind, pod *corev1.Pod) error {
	if err := deletePodNow(ctx, b.cs, pod.Namespace, pod.Name); err != nil {
		return err
	}
	if !kind.builtIn() {
		return nil
	}
	return b.reportFailed(ctx, pod)
}
