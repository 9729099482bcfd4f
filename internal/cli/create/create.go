// Package create implements `muster create -f`: TrainingJobs from files,
// folders or stdin, with the API server's objections printed field by
// field.
package create

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

const example = `  # A job from a file
  muster create -f examples/pytorch-elastic/job.yaml

  # Every job of a folder (-R: and of its subfolders), or from stdin
  muster create -f jobs/ -R
  cat job.yaml | muster create -f -

  # Let the API server check a job without creating it
  muster create -f job.yaml --dry-run=server`

// Options are create's flags and what Complete derives from them.
type Options struct {
	Filenames  []string
	Recursive  bool
	DryRun     string
	PrintFlags *genericclioptions.PrintFlags

	Namespace         string
	ExplicitNamespace bool
	Client            client.Client
	printer           printers.ResourcePrinter

	genericiooptions.IOStreams
}

// NewCmd returns the create command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(cmdutil.Scheme)}
	cmd := &cobra.Command{
		Use:     "create -f FILENAME...",
		Short:   "Create jobs from YAML or JSON files, folders or stdin",
		Example: example,
		Args:    cobra.NoArgs,
		RunE:    cmdutil.RunE(func([]string) error { return o.Complete(f) }, o.Validate, o.Run),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "a file, a folder of .yaml, .yml and .json files, or - for stdin; may be repeated")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "read the folders of -f and their subfolders")
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "none", "none, or server: the API server checks and defaults each job without creating it")
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// Complete connects and resolves the namespace.
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
	if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
		return err
	}
	o.Client, err = f.Client()
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.DryRun != "none" && o.DryRun != "server" {
		return fmt.Errorf("--dry-run=%s: none or server", o.DryRun)
	}
	return nil
}

// Run reads every manifest first, so that a typo in the last file creates
// nothing, then creates the jobs one by one; a job the API server refuses
// is reported and the others are still created.
func (o *Options) Run(ctx context.Context) error {
	jobs, err := cmdutil.ReadJobs(o.Filenames, o.Recursive, o.In)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		return fmt.Errorf("no TrainingJob in %s", strings.Join(o.Filenames, ", "))
	}
	var failed []string
	for _, d := range jobs {
		if err := o.create(ctx, d); err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s: %v\n", d.Source, err)
			failed = append(failed, d.Job.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d jobs not created: %s", len(failed), len(jobs), strings.Join(failed, ", "))
	}
	return nil
}

func (o *Options) create(ctx context.Context, d cmdutil.JobManifest) error {
	job := d.Job
	switch {
	case job.Namespace == "":
		job.Namespace = o.Namespace
	case o.ExplicitNamespace && job.Namespace != o.Namespace:
		return fmt.Errorf("trainingjob %s says metadata.namespace %s, the command -n %s: drop one of them", job.Name, job.Namespace, o.Namespace)
	}
	var opts []client.CreateOption
	if o.DryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	err := o.Client.Create(ctx, job, opts...)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("trainingjob %s/%s already exists: delete it first (muster delete %s -n %s) or give this one another metadata.name",
			job.Namespace, job.Name, job.Name, job.Namespace)
	}
	if err != nil {
		return cmdutil.JobError(err, job.Namespace, job.Name)
	}
	return o.printer.PrintObj(job, o.Out)
}
