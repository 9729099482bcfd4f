// Package importcmd implements `muster import -f`: the jobs of other
// training systems converted into TrainingJobs that behave the same,
// written as YAML or created, with a report of every field that could not
// be carried over.
package importcmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
	"github.com/muster-dev/muster/internal/importer"
)

const example = `  # A Volcano Job as a TrainingJob, printed; what could not be carried over goes to stderr
  muster import -f ctr-volcano.yaml

  # A TrainJob with its runtime, created in namespace team
  kubectl get clustertrainingruntime torch-distributed -o yaml > runtime.yaml
  muster import -f trainjob.yaml -f runtime.yaml -n team --apply

  # Every manifest of a folder; fail if anything would be dropped
  muster import -f jobs/ -R --strict

  # Have the API server check and default the converted jobs, creating nothing
  muster import -f pytorchjob.yaml --dry-run=server -o yaml`

// Options are import's flags and what Complete derives from them.
type Options struct {
	Filenames []string
	Recursive bool
	Apply     bool
	Strict    bool
	DryRun    string
	// PrintFlags is -o: without it, converted jobs are written as YAML and
	// created ones named.
	PrintFlags *genericclioptions.PrintFlags

	Namespace         string
	ExplicitNamespace bool
	Client            client.Client
	printer           printers.ResourcePrinter

	genericiooptions.IOStreams
}

// NewCmd returns the import command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("imported").WithTypeSetter(cmdutil.Scheme)}
	cmd := &cobra.Command{
		Use:   "import -f FILENAME...",
		Short: "Convert other systems' training jobs into TrainingJobs",
		Long: "Import converts jobs of other training systems into TrainingJobs that behave the same, and writes\n" +
			"them as YAML (or creates them with --apply). It reads " + strings.Join(importer.Kinds(), ", ") + ".\n" +
			"A TrainJob's TrainingRuntime or ClusterTrainingRuntime must be among the inputs.\n" +
			"Every field that could not be carried over is reported on stderr with the reason; --strict\n" +
			"then fails and writes nothing. --dry-run=server sends the jobs to the API server to be checked\n" +
			"and defaulted (admission, the webhook) without creating them.",
		Example: example,
		Args:    cobra.NoArgs,
		RunE:    cmdutil.RunE(func([]string) error { return o.Complete(f) }, o.Validate, o.Run),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "a file, a folder of .yaml, .yml and .json files, or - for stdin; may be repeated")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "read the folders of -f and their subfolders")
	cmd.Flags().BoolVar(&o.Apply, "apply", false, "create the jobs instead of printing them")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "fail, writing and creating nothing, if any field could not be carried over")
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "none", "none, or server: the API server checks and defaults each job without creating it")
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// Complete resolves the namespace and, to create or dry-run, connects.
func (o *Options) Complete(f cmdutil.Factory) error {
	var err error
	if o.Namespace, o.ExplicitNamespace, err = f.Namespace(); err != nil {
		return err
	}
	if o.DryRun == "server" {
		if err := o.PrintFlags.Complete("%s (server dry run)"); err != nil {
			return err
		}
	}
	if o.sendsToServer() || o.PrintFlags.OutputFlagSpecified() {
		if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	if !o.sendsToServer() {
		return nil
	}
	o.Client, err = f.Client()
	return err
}

// sendsToServer is whether the jobs go to the API server: created, or
// checked there.
func (o *Options) sendsToServer() bool { return o.Apply || o.DryRun == "server" }

// Validate checks the flags.
func (o *Options) Validate() error {
	if len(o.Filenames) == 0 {
		return fmt.Errorf("-f is required: a file, a folder or - for stdin")
	}
	if o.DryRun != "none" && o.DryRun != "server" {
		return fmt.Errorf("--dry-run=%s: none or server", o.DryRun)
	}
	return nil
}

// Run converts every document first, so that a document that cannot be
// converted writes and creates nothing; then reports what was dropped,
// and writes or creates the jobs.
func (o *Options) Run(ctx context.Context) error {
	var docs []importer.Document
	err := cmdutil.VisitManifests(o.Filenames, o.Recursive, o.In, func(source string, r io.Reader) error {
		d, err := importer.Parse(source, r)
		docs = append(docs, d...)
		return err
	})
	if err != nil {
		return err
	}
	results, err := importer.Convert(docs)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("no job to import in %s", strings.Join(o.Filenames, ", "))
	}
	for _, r := range results {
		o.namespace(r)
	}
	if err := importer.WriteReport(o.ErrOut, results); err != nil {
		return err
	}
	if n := importer.CountDropped(results); o.Strict && n > 0 {
		return fmt.Errorf("--strict: %d fields could not be carried over (listed above); nothing was written", n)
	}
	if !o.sendsToServer() {
		if o.printer == nil {
			return importer.WriteYAML(o.Out, results)
		}
		for _, r := range results {
			if err := o.printer.PrintObj(r.Job, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	var failed []string
	for _, r := range results {
		if err := o.create(ctx, r); err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s: %v\n", r.Source, err)
			failed = append(failed, r.Job.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d jobs not created: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// namespace is -n when given, else the source's; with --apply a job
// without one goes to the context's namespace.
func (o *Options) namespace(r importer.Result) {
	switch {
	case o.ExplicitNamespace:
		r.Job.Namespace = o.Namespace
	case r.Job.Namespace == "" && o.sendsToServer():
		r.Job.Namespace = o.Namespace
	}
}

func (o *Options) create(ctx context.Context, r importer.Result) error {
	job := r.Job
	var opts []client.CreateOption
	if o.DryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	err := o.Client.Create(ctx, job, opts...)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("trainingjob %s/%s already exists: delete it first (muster delete %s -n %s) or import into another namespace with -n",
			job.Namespace, job.Name, job.Name, job.Namespace)
	}
	if err != nil {
		return cmdutil.JobError(err, job.Namespace, job.Name)
	}
	return o.printer.PrintObj(job, o.Out)
}
