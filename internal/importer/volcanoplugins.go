package importer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// vcPlugins are a Volcano Job's plugins: name to arguments.
type vcPlugins map[string][]string

// arg is the value of --name=value (or --name value) among args.
func arg(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// volcanoRuntime is the runtime for a Volcano Job's plugins. Muster wires
// one framework per job: a framework plugin (pytorch, tensorflow, mpi)
// comes first, then ssh (MPI's keys), then env and svc (Volcano's own
// variables and hosts files). Plugins it cannot carry over are returned
// with the reason.
func volcanoRuntime(plugins vcPlugins, tasks []string) (*musterv1.Runtime, map[string]string, error) {
	var rt *musterv1.Runtime
	var err error
	chosen := ""
	switch {
	case plugins.has("pytorch"):
		chosen = "pytorch"
		rt, err = pytorchPlugin(plugins["pytorch"], tasks)
	case plugins.has("tensorflow"):
		chosen = "tensorflow"
		rt, err = tensorflowPlugin(plugins["tensorflow"])
	case (plugins.has("mpi") || plugins.has("ssh")) && mpiLauncher(plugins, tasks) != "":
		chosen = "mpi"
		mpi := &musterv1.MPIRuntime{LauncherRole: mpiLauncher(plugins, tasks)}
		if p, ok := arg(plugins["ssh"], "ssh-key-file-path"); ok {
			mpi.SSHMountPath = p
		}
		rt = &musterv1.Runtime{MPI: mpi}
	case plugins.has("env") || plugins.has("svc"):
		chosen = "volcano"
		rt = &musterv1.Runtime{VolcanoJob: &musterv1.VolcanoJobRuntime{}}
	}
	if err != nil {
		return nil, nil, err
	}
	dropped := map[string]string{}
	for name, args := range plugins {
		if why := pluginDropped(name, args, chosen); why != "" {
			dropped[name] = why
		}
	}
	return rt, dropped, nil
}

// pluginDropped says what of a plugin the runtime chosen does not carry.
func pluginDropped(name string, args []string, chosen string) string {
	carried := name == chosen || (chosen == "mpi" && (name == "mpi" || name == "ssh")) ||
		(chosen == "volcano" && (name == "env" || name == "svc"))
	switch {
	case carried:
		var why []string
		if unknown := unknownArgs(name, args); len(unknown) > 0 {
			why = append(why, fmt.Sprintf("arguments %s have no TrainingJob field", strings.Join(unknown, " ")))
		}
		if name == "svc" && !networkPolicyDisabled(args) {
			why = append(why, "Muster makes no NetworkPolicy limiting the pods' traffic to the job's own: add one if you relied on it")
		}
		return strings.Join(why, "; ")
	case name == "svc" && chosen == "mpi":
		return "Muster's MPI runtime writes the workers to /etc/mpi/hostfile (OMPI_MCA_orte_default_hostfile), " +
			"not /etc/volcano/<task>.host: a command that reads those files must read the hostfile"
	case name == "ssh":
		return "no task is an MPI launcher (name it mpimaster, master or launcher, or give the mpi plugin --master): " +
			"Muster makes SSH keys only for its MPI runtime"
	case chosen == "":
		return fmt.Sprintf("Muster has no %s plugin", name)
	}
	return fmt.Sprintf("Muster wires one framework per job, here %s: the %s plugin's variables and files are not set", chosen, name)
}

func networkPolicyDisabled(args []string) bool {
	v, ok := arg(args, "disable-network-policy")
	return (ok && v == "true") || slices.Contains(args, "--disable-network-policy")
}

// pytorchPlugin is Volcano's pytorch plugin: MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE and RANK, as Muster's static PyTorch world sets them.
func pytorchPlugin(args, tasks []string) (*musterv1.Runtime, error) {
	pt := &musterv1.PyTorchRuntime{}
	if m, ok := arg(args, "master"); ok {
		pt.MasterRole = m
	} else if slices.Contains(tasks, "master") {
		pt.MasterRole = "master"
	}
	port, err := portArg("pytorch", args, musterv1.DefaultPyTorchPort)
	pt.Port = port
	return &musterv1.Runtime{PyTorch: pt}, err
}

// tensorflowPlugin is Volcano's tensorflow plugin: TF_CONFIG from the
// tasks named for each TensorFlow task type.
func tensorflowPlugin(args []string) (*musterv1.Runtime, error) {
	tf := &musterv1.TensorFlowRuntime{}
	for _, kind := range []musterv1.TensorFlowTaskKind{musterv1.TFChief, musterv1.TFPS, musterv1.TFWorker, musterv1.TFEvaluator} {
		if role, ok := arg(args, string(kind)); ok && role != string(kind) {
			tf.TaskTypes = append(tf.TaskTypes, musterv1.TensorFlowTaskType{Role: role, Type: kind})
		}
	}
	port, err := portArg("tensorflow", args, musterv1.DefaultTensorFlowPort)
	tf.Port = port
	return &musterv1.Runtime{TensorFlow: tf}, err
}

// portArg is a plugin's --port, 0 when it is the default.
func portArg(plugin string, args []string, def int32) (int32, error) {
	p, ok := arg(args, "port")
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("spec.plugins.%s: --port=%s is not a port", plugin, p)
	}
	if int32(n) == def {
		return 0, nil
	}
	return int32(n), nil
}

func (p vcPlugins) has(name string) bool { _, ok := p[name]; return ok }

// mpiLauncher is the task that runs mpirun: the mpi plugin's --master, or
// a task named as Volcano's examples name it.
func mpiLauncher(plugins vcPlugins, tasks []string) string {
	if m, ok := arg(plugins["mpi"], "master"); ok && slices.Contains(tasks, m) {
		return m
	}
	for _, n := range []string{"mpimaster", "master", "launcher"} {
		if slices.Contains(tasks, n) {
			return n
		}
	}
	return ""
}

// knownArgs are the plugin arguments the runtime carries, or that name
// what Muster does anyway.
var knownArgs = map[string][]string{
	"pytorch":    {"master", "worker", "port"},
	"tensorflow": {"ps", "worker", "chief", "evaluator", "port"},
	"mpi":        {"master", "worker", "port"},
	"ssh":        {"ssh-key-file-path"},
	"svc":        {"publish-not-ready-addresses", "disable-network-policy"},
	"env":        nil,
}

func unknownArgs(plugin string, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, _ := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		if !slices.Contains(knownArgs[plugin], name) {
			out = append(out, args[i])
		}
		if !strings.Contains(args[i], "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
		}
	}
	return out
}
