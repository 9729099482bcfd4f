// Package version implements `muster version`.
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
	buildversion "github.com/muster-dev/muster/internal/version"
)

// Info is what version prints.
type Info struct {
	Client     buildversion.Info `json:"client"`
	Operator   []OperatorInfo    `json:"operator,omitempty"`
	Kubernetes string            `json:"kubernetes,omitempty"`
}

// OperatorInfo is one build of the operator running in the cluster, with
// the pods that run it.
type OperatorInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Image is the image the pods were given; ImageID the digest the node
	// resolved it to, which names the bytes that run.
	Image   string   `json:"image,omitempty"`
	ImageID string   `json:"imageID,omitempty"`
	Pods    []string `json:"pods"`
}

// The annotations the operator writes on its own pod at start
// (cmd/muster-operator), and the label its pods carry.
const (
	versionAnnotation = "muster.dev/operator-version"
	commitAnnotation  = "muster.dev/operator-commit"
	operatorSelector  = "app.kubernetes.io/name=muster-operator"
)

// Options are version's flags.
type Options struct {
	ClientOnly        bool
	Output            string
	OperatorNamespace string
	factory           cmdutil.Factory

	genericiooptions.IOStreams
}

// NewCmd returns the version command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, factory: f}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of muster, of the operator in the cluster and of Kubernetes",
		Long: `Print the versions of this muster, of the Muster operator running in the
cluster (its version, commit and image digest, as its pods report them) and of
Kubernetes. muster warns when it and the operator are of different minor
releases: a CLI newer or older than its operator may send or read fields the
other does not know.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(func([]string) error { return nil }, o.Validate, o.Run),
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "only muster's own version: do not contact the cluster")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "yaml or json")
	cmd.Flags().StringVar(&o.OperatorNamespace, "operator-namespace", "muster-system", "namespace the operator runs in")
	return cmd
}

// Validate checks -o.
func (o *Options) Validate() error {
	if o.Output != "" && o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("-o %s: yaml or json", o.Output)
	}
	return nil
}

// Run prints the versions. An unreachable cluster is reported after the
// client's version, which is printed anyway; an operator that cannot be
// read (no right to list pods in its namespace) is said, not fatal.
func (o *Options) Run(ctx context.Context) error {
	info := Info{Client: buildversion.Get()}
	var serverErr, operatorErr error
	if !o.ClientOnly {
		serverErr = func() error {
			cs, err := o.factory.KubeClient()
			if err != nil {
				return err
			}
			v, err := cs.Discovery().ServerVersion()
			if err != nil {
				return err
			}
			info.Kubernetes = v.GitVersion
			pods, err := cs.CoreV1().Pods(o.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
			if err != nil {
				operatorErr = err
				return nil
			}
			info.Operator = Operators(pods.Items)
			return nil
		}()
	}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(o.Out, string(b))
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		fmt.Fprint(o.Out, string(b))
	default:
		printText(o.Out, info)
		switch {
		case operatorErr != nil:
			fmt.Fprintf(o.Out, "Operator Version: unknown (%v)\n", operatorErr)
		case serverErr == nil && !o.ClientOnly && len(info.Operator) == 0:
			fmt.Fprintf(o.Out, "Operator Version: no operator pod in namespace %s\n", o.OperatorNamespace)
		}
	}
	for _, w := range Warnings(info) {
		fmt.Fprintln(o.ErrOut, "Warning:", w)
	}
	if serverErr != nil {
		return fmt.Errorf("reading the cluster's version: %w", serverErr)
	}
	return nil
}

func printText(w io.Writer, info Info) {
	c := info.Client
	fmt.Fprintf(w, "Client Version: %s (%s%s, %s)\n", c.Version, commitPart(c.Commit), c.GoVersion, c.Platform)
	for _, op := range info.Operator {
		fmt.Fprintf(w, "Operator Version: %s (%simage %s)\n", op.Version, commitPart(op.Commit), imageOf(op))
	}
	if info.Kubernetes != "" {
		fmt.Fprintf(w, "Kubernetes Version: %s\n", info.Kubernetes)
	}
}

func commitPart(c string) string {
	if c == "" {
		return ""
	}
	return "commit " + buildversion.Short(c) + ", "
}

func imageOf(op OperatorInfo) string {
	if op.ImageID != "" {
		return op.ImageID
	}
	if op.Image != "" {
		return op.Image
	}
	return "unknown"
}

// Operators groups the operator's running pods by the build they run. A
// pod that has not recorded its version (it is starting, or an operator
// older than this annotation) is known by its image's tag.
func Operators(pods []corev1.Pod) []OperatorInfo {
	byBuild := map[string]*OperatorInfo{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		op := OperatorInfo{Version: p.Annotations[versionAnnotation], Commit: p.Annotations[commitAnnotation]}
		for _, c := range p.Spec.Containers {
			if c.Name == "operator" {
				op.Image = c.Image
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "operator" {
				op.ImageID = cs.ImageID
			}
		}
		if op.Version == "" {
			op.Version = tagOf(op.Image)
		}
		key := op.Version + "\x00" + op.Commit + "\x00" + op.Image + "\x00" + op.ImageID
		if byBuild[key] == nil {
			byBuild[key] = &op
		}
		byBuild[key].Pods = append(byBuild[key].Pods, p.Name)
	}
	out := make([]OperatorInfo, 0, len(byBuild))
	for _, op := range byBuild {
		sort.Strings(op.Pods)
		out = append(out, *op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pods[0] < out[j].Pods[0] })
	return out
}

// tagOf is an image reference's tag ("" when it has none).
func tagOf(image string) string {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return image[i+1:]
}

// Warnings are what the versions say a user should know: a CLI of another
// minor release than its operator, and replicas running different builds
// (an upgrade in progress, or one stuck).
func Warnings(info Info) []string {
	var out []string
	for _, op := range info.Operator {
		if buildversion.MinorSkew(info.Client.Version, op.Version) {
			out = append(out, fmt.Sprintf("muster %s and the operator %s are of different minor releases: install the muster of the operator's release", info.Client.Version, op.Version))
			break
		}
	}
	if len(info.Operator) > 1 {
		out = append(out, fmt.Sprintf("the operator's pods run %d different builds: an upgrade is under way or stuck", len(info.Operator)))
	}
	return out
}
