package importer

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

const ancestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step"

// convertTrainJob converts a Kubeflow Trainer TrainJob
// (trainer.kubeflow.org/v1alpha1) with the TrainingRuntime or
// ClusterTrainingRuntime it refers to, which must be in the same input:
// every replicated Job of the runtime's JobSet becomes a role, the
// TrainJob's trainer and initializer settings are applied to them as
// Kubeflow does, and the runtime's ML policy becomes Muster's runtime.
func convertTrainJob(s *source, in *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	rs, rtDoc, err := trainRuntime(s, in)
	if err != nil {
		return spec, err
	}
	tp := path{"spec", "template", "spec"}
	var trainerIdx = -1
	var backoff []int32
	for i := range rs.list(tp.child("replicatedJobs")) {
		role, step, limit, err := replicatedJob(rs, tp.child("replicatedJobs", i))
		if err != nil {
			return spec, fmt.Errorf("%s %s: %w", rtDoc.Kind(), rtDoc.Name(), err)
		}
		if step == "trainer" || (trainerIdx < 0 && step == "" && role.Name == "node") {
			trainerIdx = len(spec.Roles)
		}
		if err := applyInitializer(s, &role, step); err != nil {
			return spec, err
		}
		spec.Roles = append(spec.Roles, role)
		backoff = append(backoff, limit)
	}
	rs.seen(tp.child("replicatedJobs"))
	if trainerIdx < 0 {
		return spec, fmt.Errorf("%s %s: no replicated job is the trainer (label %s: trainer, or name node)", rtDoc.Kind(), rtDoc.Name(), ancestorLabel)
	}
	trainer := &spec.Roles[trainerIdx]
	if err := applyTrainer(s, rs, trainer); err != nil {
		return spec, err
	}
	if err := jobSetFailure(rs, &spec, backoff, trainerIdx); err != nil {
		return spec, err
	}
	if err := trainRuntimePolicy(rs, &spec, trainerIdx); err != nil {
		return spec, err
	}
	trainSuccess(rs, tp.child("successPolicy"), spec.Roles)
	if err := jobSetRest(rs, &spec); err != nil {
		return spec, err
	}
	if err := trainJobOwn(s, &spec); err != nil {
		return spec, err
	}
	if spec.Roles, err = orderRoles(spec.Roles); err != nil {
		return spec, err
	}
	if spec.Runtime != nil && spec.Runtime.MPI != nil {
		spec.Roles = launcherLast(spec.Roles, spec.Runtime.MPI.LauncherRole)
	}
	for _, d := range rs.report() {
		s.dropped = append(s.dropped, Dropped{Path: rtDoc.Kind() + " " + rtDoc.Name() + ": " + d.Path, Reason: d.Reason})
	}
	return spec, nil
}

// trainRuntime finds the runtime the TrainJob refers to among the inputs.
func trainRuntime(s *source, in *inputs) (*source, Document, error) {
	rp := path{"spec", "runtimeRef"}
	name := s.str(rp.child("name"))
	kind := s.str(rp.child("kind"))
	if kind == "" {
		kind = "ClusterTrainingRuntime"
	}
	if g := s.str(rp.child("apiGroup")); g != "" && g != "trainer.kubeflow.org" {
		return nil, Document{}, fmt.Errorf("spec.runtimeRef.apiGroup %q: muster import reads runtimes of trainer.kubeflow.org", g)
	}
	s.seen(rp)
	ns := in.doc.Namespace()
	if kind == "ClusterTrainingRuntime" {
		ns = ""
	}
	d, ok := in.runtimes[runtimeKey(kind, ns, name)]
	if !ok {
		where := ""
		if ns != "" {
			where = " in namespace " + ns
		}
		return nil, Document{}, fmt.Errorf("spec.runtimeRef: the %s %s%s is not in the input: add it (kubectl get %s %s -o yaml)",
			kind, name, where, lower(kind), name)
	}
	rs := newSource(d.Object)
	for _, f := range []string{"apiVersion", "kind", "metadata"} {
		rs.use(path{f})
	}
	return rs, d, nil
}

func lower(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// replicatedJob is one replicated Job of the runtime as a role, with the
// step it is (trainer, dataset-initializer, ...) and its Job's pod budget.
func replicatedJob(rs *source, p path) (musterv1.Role, string, int32, error) {
	role := musterv1.Role{Name: rs.str(p.child("name"))}
	jp := p.child("template", "spec")
	step := rs.str(p.child("template", "metadata", "labels", ancestorLabel))
	rs.seen(p.child("template", "metadata", "labels"))
	rs.seen(p.child("template", "metadata"))
	rs.seen(p.child("template"))
	replicas, err := rs.replicas(p.child("replicas"))
	if err != nil {
		return role, "", 0, err
	}
	parallelism, err := rs.replicas(jp.child("parallelism"))
	if err != nil {
		return role, "", 0, err
	}
	completions, err := rs.int32p(jp.child("completions"))
	if err != nil {
		return role, "", 0, err
	}
	if completions != nil && parallelism != nil && *completions != *parallelism {
		rs.mention(jp.child("completions"), "Muster runs one pod per task, all at once: completions are the parallelism")
	}
	rs.use(jp.child("completionMode")) // Muster's tasks are indexed
	// Each is bounded, their product not yet.
	if n := int64(max(deref(replicas), 1)) * int64(max(deref(parallelism), 1)); n > musterv1.MaxReplicas {
		return role, "", 0, fmt.Errorf("%s: replicas times the Job's parallelism, %d, is more than a TrainingJob takes, %d", p, n, musterv1.MaxReplicas)
	}
	role.Replicas = ptr(max(deref(replicas), 1) * max(deref(parallelism), 1))
	limit, err := rs.int32p(jp.child("backoffLimit"))
	if err != nil {
		return role, "", 0, err
	}
	if limit == nil {
		limit = ptr(int32(6)) // batch/v1's default
	}
	// A Job recreates failed pods (Never) or the kubelet restarts their
	// containers (OnFailure) while its budget lasts.
	rs.str(jp.child("template", "spec", "restartPolicy"))
	role.RestartPolicy = musterv1.RestartPolicyOnFailure
	if *limit == 0 {
		role.RestartPolicy = musterv1.RestartPolicyNever
	}
	if role.Template, err = template(rs, jp.child("template")); err != nil {
		return role, "", 0, err
	}
	rs.drop(jp.child("podFailurePolicy"), "write the pod failure policy as Muster failure rules (spec.failurePolicy.rules)")
	rs.drop(jp.child("ttlSecondsAfterFinished"), "child Jobs' TTL: Muster has one TTL, the job's")
	rs.seen(jp)
	for i := range rs.list(p.child("dependsOn")) {
		dp := p.child("dependsOn", i)
		when := musterv1.DependencyRunning
		if rs.str(dp.child("status")) == "Complete" {
			when = musterv1.DependencySucceeded
		}
		role.DependsOn = append(role.DependsOn, musterv1.Dependency{Role: rs.str(dp.child("name")), When: when})
		rs.seen(dp)
	}
	rs.seen(p.child("dependsOn"))
	rs.seen(p)
	return role, step, *limit, nil
}

// container is the named container of a template, or its first.
func container(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	if len(t.Spec.Containers) > 0 {
		return &t.Spec.Containers[0]
	}
	return nil
}

// applyTrainer applies spec.trainer to the trainer's container (node), as
// Kubeflow does: image, command, args, env, resources and the number of
// nodes.
func applyTrainer(s, rs *source, r *musterv1.Role) error {
	tp := path{"spec", "trainer"}
	c := container(&r.Template, "node")
	if c == nil {
		return fmt.Errorf("the trainer's template has no container")
	}
	if img := s.str(tp.child("image")); img != "" {
		c.Image = img
	}
	if cmd := s.strings(tp.child("command")); cmd != nil {
		c.Command = cmd
	}
	if args := s.strings(tp.child("args")); args != nil {
		c.Args = args
	}
	var env []corev1.EnvVar
	if err := s.decode(tp.child("env"), &env); err != nil {
		return err
	}
	c.Env = mergeEnv(c.Env, env)
	if s.has(tp.child("resourcesPerNode")) {
		if err := s.decode(tp.child("resourcesPerNode"), &c.Resources); err != nil {
			return err
		}
	}
	numNodes, err := s.replicas(tp.child("numNodes"))
	if err != nil {
		return err
	}
	if numNodes == nil {
		if numNodes, err = rs.replicas(path{"spec", "mlPolicy", "numNodes"}); err != nil {
			return err
		}
	}
	if numNodes != nil {
		r.Replicas = numNodes
	}
	s.seen(tp)
	return nil
}

// applyInitializer applies spec.initializer's dataset or model settings to
// the initializer's container: its storage URI, variables and secret.
func applyInitializer(s *source, r *musterv1.Role, step string) error {
	var which string
	switch {
	case step == "dataset-initializer" || (step == "" && r.Name == "dataset-initializer"):
		which = "dataset"
	case step == "model-initializer" || (step == "" && r.Name == "model-initializer"):
		which = "model"
	default:
		return nil
	}
	ip := path{"spec", "initializer", which}
	if !s.has(ip) {
		return nil
	}
	c := container(&r.Template, r.Name)
	if c == nil {
		return fmt.Errorf("the %s initializer's template has no container", which)
	}
	var env []corev1.EnvVar
	if uri := s.str(ip.child("storageUri")); uri != "" {
		env = append(env, corev1.EnvVar{Name: "STORAGE_URI", Value: uri})
	}
	var more []corev1.EnvVar
	if err := s.decode(ip.child("env"), &more); err != nil {
		return err
	}
	c.Env = mergeEnv(c.Env, append(env, more...))
	if secret := s.str(ip.child("secretRef", "name")); secret != "" {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}})
	}
	s.seen(ip.child("secretRef"))
	s.seen(ip)
	s.seen(path{"spec", "initializer"})
	return nil
}

// mergeEnv sets each of add in env, replacing a variable of the same name.
func mergeEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	for _, a := range add {
		if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == a.Name }); i >= 0 {
			env[i] = a
		} else {
			env = append(env, a)
		}
	}
	return env
}

// trainRuntimePolicy is the runtime's ML policy and pod group policy:
// torch is a torchrun world of exactly numNodes, MPI Muster's MPI runtime,
// and no policy a generic job.
func trainRuntimePolicy(rs *source, spec *musterv1.TrainingJobSpec, trainerIdx int) error {
	mp := path{"spec", "mlPolicy"}
	trainer := &spec.Roles[trainerIdx]
	switch {
	case rs.has(mp.child("torch")):
		el := &musterv1.ElasticPolicy{}
		nproc := rs.str(mp.child("torch", "numProcPerNode"))
		if nproc != "" {
			el.NProcPerNode = nproc
		}
		rs.drop(mp.child("torch", "elasticPolicy"), "Kubeflow Trainer never carried out its elastic policy: the world has numNodes nodes")
		rs.seen(mp.child("torch"))
		spec.Runtime = &musterv1.Runtime{PyTorch: &musterv1.PyTorchRuntime{Elastic: el}}
		n := deref(trainer.Replicas)
		spec.Scaling = musterv1.Scaling{Replicas: ptr(n), Roles: []musterv1.ScalingRole{{Name: trainer.Name, MinReplicas: ptr(n), MaxReplicas: max(n, 1)}}}
		trainer.Replicas = nil
	case rs.has(mp.child("mpi")):
		mpi := &musterv1.MPIRuntime{LauncherRole: "launcher"}
		if n := rs.str(mp.child("mpi", "numProcPerNode")); n != "" {
			slots, err := strconv.Atoi(n)
			if err != nil || slots < 1 {
				return fmt.Errorf("spec.mlPolicy.mpi.numProcPerNode %q: a number of slots", n)
			}
			mpi.SlotsPerWorker = int32(slots)
		}
		impl, err := mpiImplementation(rs, mp.child("mpi", "mpiImplementation"))
		if err != nil {
			return err
		}
		mpi.Implementation = impl
		mpi.SSHMountPath = rs.str(mp.child("mpi", "sshAuthMountPath"))
		if asNode, err := rs.boolean(mp.child("mpi", "runLauncherAsNode")); err != nil {
			return err
		} else if asNode {
			rs.mention(mp.child("mpi", "runLauncherAsNode"), "Muster's MPI launcher runs mpirun only: it is not in the hostfile")
		}
		rs.seen(mp.child("mpi"))
		spec.Runtime = &musterv1.Runtime{MPI: mpi}
	}
	rs.use(mp.child("numNodes"))
	rs.seen(mp)
	gp := path{"spec", "podGroupPolicy"}
	switch {
	case rs.has(gp.child("coscheduling")):
		spec.Scheduling.Backend = musterv1.GangCoscheduling
		t, err := rs.int32p(gp.child("coscheduling", "scheduleTimeoutSeconds"))
		if err != nil {
			return err
		}
		spec.Scheduling.ScheduleTimeoutSeconds = deref(t)
		rs.seen(gp.child("coscheduling"))
	case rs.has(gp.child("volcano")):
		spec.Scheduling.Backend = musterv1.GangVolcano
		rs.drop(gp.child("volcano", "networkTopology"), "Muster's Volcano gang has no network topology constraint")
		rs.seen(gp.child("volcano"))
	}
	rs.seen(gp)
	return nil
}

// trainSuccess is the JobSet's success policy: by default every child Job
// completes (every task succeeds); with operator Any and targets, any
// target role completing.
func trainSuccess(rs *source, p path, roles []musterv1.Role) {
	op := rs.str(p.child("operator"))
	targets := rs.strings(p.child("targetReplicatedJobs"))
	rs.seen(p)
	disabled := func(r *musterv1.Role) {
		r.Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(int32(-1)), MinFailed: ptr(int32(1))}
	}
	for i := range roles {
		r := &roles[i]
		target := len(targets) == 0 || slices.Contains(targets, r.Name)
		switch {
		case target && (op == "Any" || (len(targets) == 1 && op != "Any")):
			n := deref(r.Replicas)
			if r.Replicas == nil { // scalable: the trainer, fixed at numNodes
				n = -1
			}
			r.Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(n), MinFailed: ptr(int32(1))}
			if n == -1 {
				disabled(r)
			}
		default:
			disabled(r)
		}
	}
	if op != "Any" && len(targets) > 1 {
		rs.mention(p.child("targetReplicatedJobs"), "Muster ends a job by one role at a time: with several targets the job succeeds when every task has ended")
	}
}

// jobSetFailure is the JobSet's failure handling: a failed child Job fails
// the JobSet, and so the TrainJob, unless the JobSet restarts. The trainer
// Job's pod budget is the job's, and each JobSet restart needs one more:
// maxRestarts is folded into backoffLimit, the one budget, which then
// bounds new attempts and pod restarts together.
func jobSetFailure(rs *source, spec *musterv1.TrainingJobSpec, backoff []int32, trainerIdx int) error {
	tp := path{"spec", "template", "spec"}
	spec.FailurePolicy.BackoffLimit = ptr(backoff[trainerIdx])
	mp := tp.child("failurePolicy", "maxRestarts")
	maxRestarts, err := rs.int32p(mp)
	if err != nil {
		return err
	}
	if maxRestarts != nil && *maxRestarts > 0 {
		limit := min(backoff[trainerIdx]+*maxRestarts, unlimited)
		spec.FailurePolicy.Retry = &musterv1.RetryPolicy{Policy: musterv1.RetryOnFailure}
		spec.FailurePolicy.BackoffLimit = ptr(limit)
		rs.mention(mp, fmt.Sprintf("Muster has no separate cap on new attempts of the job: failurePolicy.backoffLimit %d "+
			"(the trainer's backoffLimit, %d, plus these %d), the one budget of every restart, bounds them", limit, backoff[trainerIdx], *maxRestarts))
	}
	rs.drop(tp.child("failurePolicy", "rules"), "JobSet's rules match child Jobs' failure reasons; write Muster failure rules (spec.failurePolicy.rules) instead")
	rs.drop(tp.child("failurePolicy", "restartStrategy"), "Muster always recreates every pod of a new attempt")
	rs.seen(tp.child("failurePolicy"))
	for i, b := range backoff {
		if i != trainerIdx && b != backoff[trainerIdx] {
			rs.mention(tp.child("replicatedJobs", i, "template", "spec", "backoffLimit"),
				fmt.Sprintf("Muster has one restart budget for the job: the trainer's, %d", backoff[trainerIdx]))
		}
	}
	return nil
}

// jobSetRest is the rest of the JobSet: its TTL is the job's; its network
// is what Muster's Service always gives.
func jobSetRest(rs *source, spec *musterv1.TrainingJobSpec) error {
	tp := path{"spec", "template", "spec"}
	var err error
	if spec.Run.TTLSecondsAfterFinished, err = rs.int32p(tp.child("ttlSecondsAfterFinished")); err != nil {
		return err
	}
	rs.drop(tp.child("startupPolicy"), "Muster starts roles together unless they depend on each other (spec.roles[].dependsOn)")
	rs.seen(tp.child("network"))
	rs.use(tp.child("network", "enableDNSHostnames"))
	rs.use(tp.child("network", "publishNotReadyAddresses"))
	rs.drop(tp.child("network", "subdomain"), "Muster's pods are always named <pod>.<job>")
	rs.seen(tp)
	rs.seen(path{"spec", "template"})
	rs.drop(path{"spec", "template", "metadata"}, "labels and annotations of the JobSet, which Muster does not make")
	return nil
}

// trainJobOwn are the TrainJob's own run settings.
func trainJobOwn(s *source, spec *musterv1.TrainingJobSpec) error {
	sp := path{"spec"}
	suspend, err := s.boolean(sp.child("suspend"))
	if err != nil {
		return err
	}
	if suspend {
		spec.Run.Execution = musterv1.ExecutionSuspend
	}
	if d, ok, err := s.integer(sp.child("activeDeadlineSeconds")); err != nil {
		return err
	} else if ok {
		spec.Run.ActiveDeadlineSeconds = d
	}
	s.drop(sp.child("managedBy"), "Muster has no managedBy: the operator always runs its own jobs")
	s.drop(sp.child("labels"), "labels of the JobSet Kubeflow makes: set them on the TrainJob or the templates")
	s.drop(sp.child("annotations"), "annotations of the JobSet Kubeflow makes: set them on the TrainJob or the templates")
	s.drop(sp.child("podTemplateOverrides"), "write the overrides into the roles' templates")
	s.drop(sp.child("podSpecOverrides"), "write the overrides into the roles' templates")
	return nil
}
