package importer

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// convertT9k converts a T9k PyTorchTrainingJob
// (batch.tensorstack.dev/v1beta1): a static PyTorch world, or with
// torchrunConfig a torchrun world, elastic with elastic.
func convertT9k(s *source, _ *inputs) (musterv1.TrainingJobSpec, error) {
	var spec musterv1.TrainingJobSpec
	sp := path{"spec"}
	var weights []int32
	for i := range s.list(sp.child("replicaSpecs")) {
		rp := sp.child("replicaSpecs", i)
		r := musterv1.Role{Name: s.str(rp.child("type"))}
		if r.Name != "master" && r.Name != "worker" {
			return spec, fmt.Errorf("%s: type %q: master or worker", rp.child("type"), r.Name)
		}
		n, err := s.replicas(rp.child("replicas"))
		if err != nil {
			return spec, err
		}
		r.Replicas = ptr(int32(1))
		if n != nil {
			r.Replicas = n
		}
		// T9k's default is Never, Muster's ExitCode: always written.
		if r.RestartPolicy, err = replicaRestart(rp.child("restartPolicy"), s.str(rp.child("restartPolicy")), musterv1.RestartPolicyNever); err != nil {
			return spec, err
		}
		s.str(rp.child("template", "spec", "restartPolicy")) // T9k forces Never, as Muster does
		if err = roleTemplate(s, rp.child("template"), &r); err != nil {
			return spec, err
		}
		w, err := s.int32p(rp.child("scalingWeight"))
		if err != nil {
			return spec, err
		}
		weights = append(weights, deref(w))
		spec.Roles = append(spec.Roles, r)
	}
	s.seen(sp.child("replicaSpecs"))
	if len(spec.Roles) == 0 {
		return spec, fmt.Errorf("spec.replicaSpecs: a PyTorchTrainingJob needs at least one replica spec")
	}
	// T9k's master is the first replica spec.
	pt := &musterv1.PyTorchRuntime{}
	if first := spec.Roles[0].Name; first != "master" && slices.ContainsFunc(spec.Roles, func(r musterv1.Role) bool { return r.Name == "master" }) {
		pt.MasterRole = first
	}
	spec.Runtime = &musterv1.Runtime{PyTorch: pt}
	if err := t9kTorchrun(s, &spec, weights); err != nil {
		return spec, err
	}
	if err := t9kRunPolicy(s, &spec); err != nil {
		return spec, err
	}
	if err := t9kRunMode(s, &spec); err != nil {
		return spec, err
	}
	s.drop(sp.child("scheduler", "t9kScheduler"), "the T9k scheduler is not a Muster gang backend: use spec.scheduling "+
		"(a Volcano queue, a native or coscheduling gang) or a Kueue LocalQueue")
	s.drop(sp.child("tensorboardSpec"), "not converted: T9k names its logs by fileset, Muster by a volume of the job: set spec.tensorboard.logs to the volume the job writes them to")
	return spec, nil
}

func enabled(s *source, p path) (bool, error) {
	on, err := s.boolean(p.child("enabled"))
	if err != nil {
		return false, err
	}
	alt, err := s.boolean(p.child("enable")) // the spelling of T9k's older documents
	return on || alt, err
}

// t9kTorchrun is torchrunConfig and elastic: the training container runs
// torchrun, configured by PET_* variables; with elastic the replica specs
// are scalable within the job's bounds.
func t9kTorchrun(s *source, spec *musterv1.TrainingJobSpec, weights []int32) error {
	sp := path{"spec"}
	tp, ep := sp.child("torchrunConfig"), sp.child("elastic")
	on, err := enabled(s, tp)
	if err != nil {
		return err
	}
	elasticOn, err := enabled(s, ep)
	if err != nil {
		return err
	}
	if !on {
		s.drop(tp, "torchrun is not enabled")
		if s.has(ep) {
			s.drop(ep, "T9k's elastic mode works only with torchrunConfig enabled, and it is not")
		}
		for i, w := range weights {
			if w != 0 {
				s.drop(sp.child("replicaSpecs", i, "scalingWeight"), "used only in elastic mode")
			}
		}
		return nil
	}
	el := &musterv1.ElasticPolicy{NProcPerNode: s.str(tp.child("procPerNode"))}
	if el.MaxRestarts, err = s.int32p(tp.child("maxRestarts")); err != nil {
		return err
	}
	extra, env, rdzv := t9kExtraOptions(s.strings(tp.child("extraOptions")))
	if el.Rendezvous, err = torchRendezvous(rendezvous{backend: s.str(tp.child("rdzvBackend")), endpoint: rdzv}); err != nil {
		return fmt.Errorf("spec.torchrunConfig: %w", err)
	}
	if len(extra) > 0 {
		s.mention(tp.child("extraOptions"), fmt.Sprintf("%s: not torchrun options of the form --name[=value]", strings.Join(extra, " ")))
	}
	s.seen(tp)
	spec.Runtime.PyTorch.Elastic = el
	for i := range spec.Roles {
		c := trainingContainer(spec.Roles[i].Template.Spec.Containers)
		if c == nil {
			continue
		}
		// T9k runs torchrun <options> <args> and ignores the command, so
		// the command is torchrun whatever it was.
		c.Command = []string{"torchrun"}
		c.Env = append(append([]corev1.EnvVar{}, env...), c.Env...)
	}
	return t9kElastic(s, spec, weights, elasticOn)
}

// trainingContainer is the container T9k runs torchrun in: the one named
// python, else the first.
func trainingContainer(cs []corev1.Container) *corev1.Container {
	for i := range cs {
		if cs[i].Name == "python" {
			return &cs[i]
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

// t9kExtraOptions turns torchrun options into the PET_* variables torchrun
// reads for them; the rendezvous endpoint is Muster's field.
func t9kExtraOptions(opts []string) (unknown []string, env []corev1.EnvVar, endpoint string) {
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		if !strings.HasPrefix(o, "--") {
			unknown = append(unknown, o)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(o, "--"), "=")
		if !hasValue {
			if i+1 < len(opts) && !strings.HasPrefix(opts[i+1], "--") {
				value, i = opts[i+1], i+1
			} else {
				value = "1" // a switch
			}
		}
		key := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if key == "RDZV_ENDPOINT" {
			endpoint = value
			continue
		}
		env = append(env, corev1.EnvVar{Name: "PET_" + key, Value: value})
	}
	return unknown, env, endpoint
}

// t9kElastic makes the replica specs scalable. T9k bounds the job as a
// whole; Muster bounds each role, so with several roles the bounds are the
// first role's and the others may go down to none.
func t9kElastic(s *source, spec *musterv1.TrainingJobSpec, weights []int32, on bool) error {
	sp := path{"spec"}
	ep := sp.child("elastic")
	var minR, maxR, expected *int32
	var total int32
	for _, r := range spec.Roles {
		total += deref(r.Replicas)
	}
	if on {
		var err error
		if minR, err = s.replicas(ep.child("minReplicas")); err != nil {
			return err
		}
		if maxR, err = s.replicas(ep.child("maxReplicas")); err != nil {
			return err
		}
		if expected, err = s.replicas(ep.child("expectedReplicas")); err != nil {
			return err
		}
		s.seen(ep)
	} else {
		s.drop(ep, "elastic mode is not enabled")
	}
	if minR == nil {
		minR = ptr(total)
	}
	if maxR == nil {
		maxR = ptr(max(total, *minR))
	}
	size := total
	if expected != nil {
		size = *expected
	}
	size = min(max(size, *minR), *maxR)
	if len(spec.Roles) > 1 && on {
		s.mention(ep, fmt.Sprintf("T9k bounds the job as a whole; Muster bounds each role: role %s takes %d to %d, the others 0 to %d",
			spec.Roles[0].Name, *minR, *maxR, *maxR))
	}
	var sc musterv1.Scaling
	for i := range spec.Roles {
		r := musterv1.ScalingRole{Name: spec.Roles[i].Name, MinReplicas: ptr(int32(0)), MaxReplicas: *maxR}
		if i == 0 {
			r.MinReplicas = ptr(*minR)
		}
		if !on {
			// A fixed-size torchrun world: each role at its replicas.
			n := deref(spec.Roles[i].Replicas)
			r.MinReplicas, r.MaxReplicas = ptr(n), max(n, 1)
		}
		if on && weights[i] > 0 {
			r.Weight = weights[i]
		}
		spec.Roles[i].Replicas = nil
		sc.Roles = append(sc.Roles, r)
	}
	if !on {
		size = total
	}
	sc.Replicas = ptr(size)
	spec.Scaling = sc
	// T9k's job ends with its first replica spec, torchrun or not.
	if len(spec.Roles) > 1 {
		spec.Roles[0].Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(int32(1)), MinFailed: ptr(int32(1))}
		for i := range spec.Roles[1:] {
			spec.Roles[i+1].Completion = &musterv1.CompletionPolicy{MinSucceeded: ptr(int32(-1))}
		}
	}
	return nil
}

func t9kRunPolicy(s *source, spec *musterv1.TrainingJobSpec) error {
	p := path{"spec", "runPolicy"}
	var err error
	if d, ok, err := s.integer(p.child("activeDeadlineSeconds")); err != nil {
		return err
	} else if ok {
		spec.Run.ActiveDeadlineSeconds = d
	}
	if spec.FailurePolicy.BackoffLimit, err = s.int32p(p.child("backoffLimit")); err != nil {
		return err
	}
	// T9k keeps finished pods unless told otherwise.
	spec.Run.CleanPodPolicy = musterv1.CleanPodPolicyNone
	switch c := s.str(p.child("cleanUpPolicy")); c {
	case "", "None":
	case "Unfinished":
		spec.Run.CleanPodPolicy = musterv1.CleanPodPolicyRunning
	case "All":
		spec.Run.CleanPodPolicy = musterv1.CleanPodPolicyAll
	default:
		return fmt.Errorf("%s: %q: All, Unfinished or None", p.child("cleanUpPolicy"), c)
	}
	s.seen(p)
	return nil
}

// t9kRunMode is debug mode (commands replaced) and pause mode (the job
// suspended).
func t9kRunMode(s *source, spec *musterv1.TrainingJobSpec) error {
	p := path{"spec", "runMode"}
	dp := p.child("debug")
	on, err := enabled(s, dp)
	if err != nil {
		return err
	}
	if on {
		d := &musterv1.DebugPolicy{}
		for i := range s.list(dp.child("replicaSpecs")) {
			rp := dp.child("replicaSpecs", i)
			rd := musterv1.RoleDebug{Name: s.str(rp.child("type")), Command: s.strings(rp.child("command"))}
			skip, err := s.boolean(rp.child("skipInitContainer"))
			if err != nil {
				return err
			}
			if skip {
				rd.RunInitContainers = ptr(false)
			}
			d.Roles = append(d.Roles, rd)
			s.seen(rp)
		}
		s.seen(dp.child("replicaSpecs"))
		spec.Run.Debug = d
	} else {
		s.drop(dp, "debug mode is not enabled")
	}
	s.seen(dp)
	pp := p.child("pause")
	paused, err := enabled(s, pp)
	if err != nil {
		return err
	}
	if paused {
		spec.Run.Execution = musterv1.ExecutionSuspend
	}
	s.drop(pp.child("resumeSpecs"), "Muster resumes with the templates as they are: edit them while the job is suspended")
	s.seen(pp)
	s.seen(p)
	return nil
}
