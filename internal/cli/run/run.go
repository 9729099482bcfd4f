// Package run implements `muster run`: a job built from flags, as
// torchelastic's `petctl run` makes one, printed or created.
package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

const example = `  # Elastic PyTorch: 2 to 4 pods of 1 process each, the script shipped in a ConfigMap
  muster run mnist --image pytorch/pytorch:2.5.1-cpu --nnodes 2:4 --script train.py -- --epochs 5

  # Any command, 3 pods, no torchrun
  muster run sweep --image python:3.11 --runtime none --nnodes 3 -- python3 -c "print('hi')"

  # Only print the objects
  muster run mnist --image pytorch/pytorch:2.5.1-cpu --script train.py --dry-run=client -o yaml`

// Options are run's flags and what Complete derives from them.
type Options struct {
	Image, Nodes, NProc, Runtime, Role, Script, RestartPolicy, RestartMode, Queue, Gang, DryRun string
	EnvFlags                                                                                    []string
	GPUs                                                                                        int64
	BackoffLimit                                                                                int32
	backoffSet                                                                                  bool
	PrintFlags                                                                                  *genericclioptions.PrintFlags

	Spec    Spec
	Client  client.Client
	printer printers.ResourcePrinter

	genericiooptions.IOStreams
}

// NewCmd returns the run command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(cmdutil.Scheme)}
	cmd := &cobra.Command{
		Use:   "run NAME --image IMAGE [--nnodes N|MIN:MAX] [--script FILE] [flags] [-- COMMAND|ARGS...]",
		Short: "Create a job from flags: elastic PyTorch under torchrun by default, or any command",
		Long: "Run builds a TrainingJob of one role from flags and creates it (--dry-run=client prints it).\n" +
			"With the pytorch runtime (the default) the role runs under torchrun's elastic agent, --nnodes\n" +
			"pods of --nproc-per-node processes each, scalable between MIN and MAX; with --runtime none it\n" +
			"has N pods running the command as given. --script ships a local file in a ConfigMap\n" +
			"<NAME>-script and runs it (torchrun SCRIPT, or python3 SCRIPT), the words after -- being its\n" +
			"arguments; without --script the words after -- are the command.",
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.backoffSet = cmd.Flags().Changed("backoff-limit")
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return fmt.Errorf("one job name before --, got %v", args[:dash])
			}
			return cmdutil.RunE(func(a []string) error { return o.Complete(f, a[0], a[1:]) }, o.Validate, o.Run)(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Image, "image", "", "the container image (required)")
	fl.StringVar(&o.Nodes, "nnodes", "1", "pods: N, or MIN:MAX for an elastic world that may be scaled between them")
	fl.StringVar(&o.NProc, "nproc-per-node", "1", "torchrun processes per pod: a number, gpu, cpu or auto")
	fl.StringVar(&o.Runtime, "runtime", "pytorch", "pytorch (torchrun, elastic) or none (the command as given)")
	fl.StringVar(&o.Role, "role", "worker", "the role's name")
	fl.StringVar(&o.Script, "script", "", "a local file to ship in a ConfigMap and run")
	fl.StringArrayVar(&o.EnvFlags, "env", nil, "NAME=VALUE for the container; repeatable")
	fl.Int64Var(&o.GPUs, "gpus", 0, "nvidia.com/gpu per pod")
	fl.StringVar(&o.RestartPolicy, "restart-policy", string(musterv1.RestartPolicyOnFailure), "Never, OnFailure, Always or ExitCode")
	fl.Int32Var(&o.BackoffLimit, "backoff-limit", 0, "restarts the job may use (default: the API's)")
	fl.StringVar(&o.RestartMode, "restart-mode", "", "how a restart happens: InPlace or Recreate (default: the operator's)")
	fl.StringVar(&o.Queue, "queue", "", "a Kueue LocalQueue (the kueue.x-k8s.io/queue-name label)")
	fl.StringVar(&o.Gang, "gang", "", "gang backend: None, Native, Coscheduling or Volcano (default: the operator's)")
	fl.StringVar(&o.DryRun, "dry-run", "none", "none, client (print, create nothing) or server (the API server checks it)")
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.MarkFlagRequired("image")
	_ = cmd.MarkFlagFilename("script", "py")
	return cmd
}

// Complete parses the flags into a Spec and connects.
func (o *Options) Complete(f cmdutil.Factory, name string, rest []string) error {
	ns, _, err := f.Namespace()
	if err != nil {
		return err
	}
	lo, hi, err := parseNodes(o.Nodes)
	if err != nil {
		return err
	}
	env, err := parseEnv(o.EnvFlags)
	if err != nil {
		return err
	}
	o.Spec = Spec{Name: name, Namespace: ns, Image: o.Image, Command: rest, PyTorch: o.Runtime == "pytorch",
		MinNodes: lo, MaxNodes: hi, NProcPerNode: o.NProc, Role: o.Role, Env: env, GPUs: o.GPUs,
		RestartPolicy: musterv1.RestartPolicy(o.RestartPolicy), RestartMode: musterv1.RestartMode(o.RestartMode), Queue: o.Queue, Gang: musterv1.GangBackend(o.Gang)}
	if o.backoffSet {
		o.Spec.BackoffLimit = &o.BackoffLimit
	}
	if o.Script != "" {
		b, err := os.ReadFile(o.Script)
		if err != nil {
			return fmt.Errorf("--script: %w", err)
		}
		o.Spec.Script, o.Spec.ScriptName = string(b), filepath.Base(o.Script)
	}
	switch o.DryRun {
	case "client":
		_ = o.PrintFlags.Complete("%s (dry run)")
	case "server":
		_ = o.PrintFlags.Complete("%s (server dry run)")
	}
	if o.printer, err = o.PrintFlags.ToPrinter(); err != nil {
		return err
	}
	if o.DryRun == "client" {
		return nil
	}
	o.Client, err = f.Client()
	return err
}

// Validate checks what the API server would only report later, or not at
// all: the runtime, a command to run, the dry-run mode.
func (o *Options) Validate() error {
	switch {
	case o.Runtime != "pytorch" && o.Runtime != "none":
		return fmt.Errorf("--runtime %s: pytorch or none", o.Runtime)
	case o.DryRun != "none" && o.DryRun != "client" && o.DryRun != "server":
		return fmt.Errorf("--dry-run=%s: none, client or server", o.DryRun)
	case o.Spec.Script == "" && len(o.Spec.Command) == 0:
		return fmt.Errorf("nothing to run: give --script FILE or a command after --")
	case !o.Spec.PyTorch && o.Spec.MinNodes != o.Spec.MaxNodes:
		return fmt.Errorf("--nnodes %s: a range needs the pytorch runtime (torchrun's elastic agent); --runtime none takes N", o.Nodes)
	case o.GPUs < 0:
		return fmt.Errorf("--gpus %d: 0 or more", o.GPUs)
	}
	return nil
}

// Run creates the job, then the ConfigMap owned by it (its pods wait for
// the ConfigMap, and it goes with the job); or prints them.
func (o *Options) Run(ctx context.Context) error {
	job, cm := Build(o.Spec)
	if o.DryRun == "client" {
		if cm != nil {
			if err := o.printer.PrintObj(cm, o.Out); err != nil {
				return err
			}
		}
		return o.printer.PrintObj(job, o.Out)
	}
	var opts []client.CreateOption
	if o.DryRun == "server" {
		opts = append(opts, client.DryRunAll)
	}
	err := o.Client.Create(ctx, job, opts...)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("trainingjob %s/%s already exists: delete it first (muster delete %s -n %s) or choose another name",
			job.Namespace, job.Name, job.Name, job.Namespace)
	}
	if err != nil {
		return cmdutil.JobError(err, job.Namespace, job.Name)
	}
	if cm != nil {
		if job.UID != "" {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: musterv1.GroupVersion.String(), Kind: "TrainingJob", Name: job.Name, UID: job.UID}}
		}
		if err := o.Client.Create(ctx, cm, opts...); err != nil {
			return fmt.Errorf("trainingjob %s/%s was created, but not its script's configmap %s (its pods wait for it): %w",
				job.Namespace, job.Name, cm.Name, err)
		}
	}
	return o.printer.PrintObj(job, o.Out)
}
