// Package debug implements `muster debug`: a job started in debug mode
// (spec.run.debug: every pod runs a debug command instead of its own, T9k's
// debug mode), made from a file or as a copy of an existing job; or a
// debug copy of one task's pod, outside the job, as `kubectl debug
// --copy-to` makes one.
package debug

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/muster-dev/muster/internal/cli/cmdutil"
)

const example = `  # Create a job from a file in debug mode: every pod runs "sleep inf", ready to exec into
  muster debug -f job.yaml

  # A debug copy of job pet, named pet-debug, whose workers run a command of your own
  muster debug pet --copy pet-debug --role worker -- python3 -m pdb train.py

  # A copy of the pod of task worker/1, outside the job, running "sleep inf"
  muster debug pet --task worker/1

  # Only print that pod
  muster debug pet --task worker/1 --dry-run=client -o yaml`

// DefaultCommand is the debug command when none is given after --: the
// one spec.run.debug defaults to.
var DefaultCommand = []string{"sleep", "inf"}

// Options are debug's flags and what Complete derives from them.
type Options struct {
	Filenames          []string
	CopyTo             string
	Task               string
	Roles              []string
	SkipInitContainers bool
	SameNode           bool
	DryRun             string
	PrintFlags         *genericclioptions.PrintFlags

	// Job is the job named on the command line, when there is one.
	Job string
	// Command is what follows --.
	Command   []string
	Namespace string
	// ExplicitNamespace is whether -n was given.
	ExplicitNamespace bool
	Client            client.Client
	Kube              kubernetes.Interface
	printer           printers.ResourcePrinter
	// role and index are --task, parsed.
	role  string
	index int

	genericiooptions.IOStreams
}

// NewCmd returns the debug command.
func NewCmd(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("created").WithTypeSetter(cmdutil.Scheme)}
	cmd := &cobra.Command{
		Use:   "debug (-f FILENAME | JOB --copy NAME | JOB --task ROLE/INDEX) [--role ROLE]... [-- COMMAND...]",
		Short: "Start a job in debug mode, or make a debug copy of one task's pod",
		Long: "With -f or --copy, debug creates a job in debug mode: spec.run.debug makes the operator create\n" +
			"every pod with its containers' command replaced (by the command after --, else `sleep inf`) and\n" +
			"their args dropped, so that you can exec into the job's real environment. -f reads the job from\n" +
			"a file; --copy NAME copies an existing job's spec under a new name, since spec.run.debug is set\n" +
			"when a job is created and cannot change later (the copy runs anew: it is not stopped, held or\n" +
			"suspended because the original was). --role gives only the named roles the command after --;\n" +
			"a debug job's other roles run `sleep inf`, as the API has no debug mode for part of a job.\n\n" +
			"With --task ROLE/INDEX, debug copies the task's current pod into a pod <pod>-debug outside the\n" +
			"job: same image, environment, volumes, node selector and tolerations, its containers running\n" +
			"the command after -- (else `sleep inf`) without probes. The copy carries none of the job's\n" +
			"labels and no owner, so the operator, the job's Service and its gang ignore it; delete it\n" +
			"when done. It is scheduled anew (--same-node puts it on the task's node) and asks for the\n" +
			"task's resources, which a full node may not have.",
		Example:           example,
		ValidArgsFunction: cmdutil.JobNames(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash > 1 {
				return fmt.Errorf("one job name before --, got %v", args[:dash])
			}
			return cmdutil.RunE(func(a []string) error { return o.Complete(f, a[:dash], a[dash:]) }, o.Validate, o.Run)(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVarP(&o.Filenames, "filename", "f", nil, "a job's file, or - for stdin: create that job in debug mode")
	fl.StringVar(&o.CopyTo, "copy", "", "create a copy of JOB in debug mode under this name")
	fl.StringVar(&o.Task, "task", "", "copy the pod of JOB's task ROLE/INDEX, e.g. worker/1, and run the debug command in the copy")
	fl.StringArrayVar(&o.Roles, "role", nil, "with -f or --copy: give only this role the command after --; repeatable")
	fl.BoolVar(&o.SkipInitContainers, "skip-init-containers", false, "leave the init containers out")
	fl.BoolVar(&o.SameNode, "same-node", false, "with --task: put the copy on the node of the task's pod")
	fl.StringVar(&o.DryRun, "dry-run", "none", "none, client (print, create nothing) or server (the API server checks it)")
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("task", tasks(f))
	return cmd
}

// Complete takes the job and the command, and connects.
func (o *Options) Complete(f cmdutil.Factory, args, command []string) error {
	if len(args) == 1 {
		o.Job = args[0]
	}
	o.Command = command
	var err error
	if o.Namespace, o.ExplicitNamespace, err = f.Namespace(); err != nil {
		return err
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
	if len(o.Filenames) > 0 && o.DryRun == "client" {
		return nil
	}
	if o.Client, err = f.Client(); err != nil {
		return err
	}
	if o.Task != "" {
		o.Kube, err = f.KubeClient()
	}
	return err
}

// Validate checks that the flags ask for one thing, and parses --task.
func (o *Options) Validate() error {
	if err := o.validateMode(); err != nil {
		return err
	}
	switch {
	case o.DryRun != "none" && o.DryRun != "client" && o.DryRun != "server":
		return fmt.Errorf("--dry-run=%s: none, client or server", o.DryRun)
	case o.Task != "" && len(o.Roles) > 0:
		return fmt.Errorf("--role is for -f and --copy: --task %s already names the role", o.Task)
	case o.SameNode && o.Task == "":
		return fmt.Errorf("--same-node is for --task: a debug job's pods are scheduled as the job's are")
	case len(o.Roles) > 0 && len(o.Command) == 0 && !o.SkipInitContainers:
		return fmt.Errorf("--role gives the named roles the command after --: give one (e.g. -- bash -c 'sleep 3600'); without it every role runs `sleep inf`")
	}
	if o.Task == "" {
		return nil
	}
	role, index, ok := strings.Cut(o.Task, "/")
	n, err := strconv.Atoi(index)
	if !ok || role == "" || err != nil || n < 0 {
		return fmt.Errorf("--task %q: ROLE/INDEX, e.g. worker/0", o.Task)
	}
	o.role, o.index = role, n
	return nil
}

// validateMode checks that one of -f, --copy and --task is given, with a
// job name where it needs one.
func (o *Options) validateMode() error {
	modes := 0
	for _, set := range []bool{len(o.Filenames) > 0, o.CopyTo != "", o.Task != ""} {
		if set {
			modes++
		}
	}
	switch {
	case modes == 0:
		return fmt.Errorf("say what to debug: -f FILE (a new job in debug mode), JOB --copy NAME (a copy of a job in debug mode) or JOB --task ROLE/INDEX (a copy of one task's pod)")
	case modes > 1:
		return fmt.Errorf("-f, --copy and --task each make something else: give one of them")
	case len(o.Filenames) > 0 && o.Job != "":
		return fmt.Errorf("-f reads the job from a file: leave out the job name %s, or use --copy NAME to copy job %s", o.Job, o.Job)
	case o.Task != "" && o.Job == "":
		return fmt.Errorf("name the job: muster debug JOB --task %s", o.Task)
	case o.CopyTo != "" && o.Job == "":
		return fmt.Errorf("name the job: muster debug JOB --copy %s", o.CopyTo)
	}
	return nil
}

// Run makes the debug job or pod.
func (o *Options) Run(ctx context.Context) error {
	if o.Task != "" {
		return o.runTask(ctx)
	}
	return o.runJob(ctx)
}

// human is whether the output is for people: the created line, then how
// to go on. With -o the printer's output stands alone.
func (o *Options) human() bool {
	return o.PrintFlags.OutputFormat == nil || *o.PrintFlags.OutputFormat == ""
}

func (o *Options) createOpts() []client.CreateOption {
	if o.DryRun == "server" {
		return []client.CreateOption{client.DryRunAll}
	}
	return nil
}

// command is the debug command, as people read it.
func command(cmd []string) string {
	if len(cmd) == 0 {
		cmd = DefaultCommand
	}
	words := make([]string, len(cmd))
	for i, w := range cmd {
		if w == "" || strings.ContainsAny(w, " \t'\"$\\") {
			w = strconv.Quote(w)
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

func orDefault(cmd []string) []string {
	if len(cmd) == 0 {
		return slices.Clone(DefaultCommand)
	}
	return cmd
}
