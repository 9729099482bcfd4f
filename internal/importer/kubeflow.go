package importer

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// replicaJob says how one Kubeflow-style job format (a map of replica
// types to replica specs) differs from the others.
type replicaJob struct {
	specs path     // the replica specs map
	kind  string   // the job's kind, for messages
	types []string // the replica types the kind has, in the order of the roles
	// defaults are the restartPolicy of a replica spec without one, by
	// role; a role not named has Never.
	defaults map[string]musterv1.RestartPolicy
	// replicas are the replicas of a spec without them, by role; a role not
	// named has 1.
	replicas      map[string]int32
	workerWaits   bool   // the worker role waits for the master to run
	exitCodeNote  string // what ExitCode loses, if anything
	extraReplicas map[string]string
}

// kubeflowExitCode is what Muster's ExitCode policy does differently from
// Kubeflow's Training Operator's.
const kubeflowExitCode = "Kubeflow retries every exit code from 128 up; Muster's ExitCode retries 130, 137, 138 and 143 and OOM kills " +
	"and fails the job on any other code (add a failure rule with onExitCodes for others)"

// kfReplicas converts the replica specs into roles named after their
// types in lower case, in the order f.types gives. Kubeflow takes a type in
// any case (worker, Worker, WORKER), so does this.
func kfReplicas(s *source, f replicaJob) ([]musterv1.Role, error) {
	rank := func(t string) int {
		i := slices.IndexFunc(f.types, func(k string) bool { return strings.EqualFold(k, t) })
		if i < 0 {
			return len(f.types)
		}
		return i
	}
	types := s.keys(f.specs)
	slices.SortStableFunc(types, func(a, b string) int { return rank(a) - rank(b) })
	var roles []musterv1.Role
	for _, t := range types {
		p := f.specs.child(t)
		if reason, ok := f.extraReplicas[strings.ToLower(t)]; ok {
			s.drop(p, reason)
			continue
		}
		if rank(t) == len(f.types) {
			return nil, fmt.Errorf("%s: replica type %q: a %s has %s replicas", p, t, f.kind, spellTypes(f.types))
		}
		r := musterv1.Role{Name: lowerRole(t)}
		n, err := s.replicas(p.child("replicas"))
		if err != nil {
			return nil, err
		}
		r.Replicas = ptr(int32(1))
		if d, ok := f.replicas[r.Name]; ok {
			r.Replicas = ptr(d)
		}
		if n != nil {
			r.Replicas = n
		}
		rpPath := p.child("restartPolicy")
		def := musterv1.RestartPolicyNever
		if d, ok := f.defaults[r.Name]; ok {
			def = d
		}
		if r.RestartPolicy, err = replicaRestart(rpPath, s.str(rpPath), def); err != nil {
			return nil, err
		}
		if r.RestartPolicy == musterv1.RestartPolicyExitCode && f.exitCodeNote != "" {
			s.note(rpPath, f.exitCodeNote)
		}
		// The operator replaces the template's restartPolicy with the
		// replica's, as Muster does.
		s.str(p.child("template", "spec", "restartPolicy"))
		if err = roleTemplate(s, p.child("template"), &r); err != nil {
			return nil, err
		}
		roles = append(roles, r)
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("%s: a %s needs a %s replica spec", f.specs, f.kind, strings.Join(f.types, " or "))
	}
	return roles, nil
}

// spellTypes lists replica types as a sentence: Master and Worker.
func spellTypes(types []string) string {
	if len(types) < 2 {
		return strings.Join(types, "")
	}
	return strings.Join(types[:len(types)-1], ", ") + " and " + types[len(types)-1]
}

// replicaPath is the path of the replica spec a role came from, in the
// document's own spelling of its type.
func replicaPath(s *source, specs path, role string) path {
	for _, t := range s.keys(specs) {
		if strings.EqualFold(t, role) {
			return specs.child(t)
		}
	}
	return specs.child(role)
}

// findRole is the role of that name, or nil.
func findRole(roles []musterv1.Role, name string) *musterv1.Role {
	for i := range roles {
		if roles[i].Name == name {
			return &roles[i]
		}
	}
	return nil
}

// kubeflowPort is the port a Kubeflow operator gave its framework: the
// container port of that name in the role's template, else the kind's
// default, which the operator's defaulting would have added.
func kubeflowPort(r *musterv1.Role, name string, def int32) int32 {
	if r == nil {
		return def
	}
	if p := containerPort(r.Template, name); p != nil {
		return *p
	}
	return def
}

// setEnv defines vars in every container of the role's template (at tp in
// the document), after the container's own, replacing any of the same
// name: the Kubeflow operators appended theirs, so theirs won. Values may
// refer to the variables Muster's runtime sets before the container's own.
func setEnv(s *source, tp path, r *musterv1.Role, vars []corev1.EnvVar) {
	ours := func(e corev1.EnvVar) bool {
		return slices.ContainsFunc(vars, func(v corev1.EnvVar) bool { return v.Name == e.Name })
	}
	for i := range r.Template.Spec.Containers {
		c := &r.Template.Spec.Containers[i]
		for j, e := range c.Env {
			if ours(e) {
				s.mention(tp.child("spec", "containers", i, "env", j),
					"the Kubeflow operator replaced "+e.Name+" with its own value, and so does the import")
			}
		}
		c.Env = append(slices.DeleteFunc(c.Env, ours), vars...)
	}
}

// podDNSName spells, with the variables every pod has, the name task index
// of role resolves by: what a Kubeflow operator's per-replica Service name
// (<job>-<type>-<index>) becomes.
func podDNSName(role string, index int) string {
	return fmt.Sprintf("$(%s)-%s-%d.$(%s)", musterv1.EnvJobName, role, index, musterv1.EnvServiceName)
}

// kubeflowJob is the part every Kubeflow Training Operator kind shares:
// the run policy at spec.runPolicy placed in the spec once the roles are
// known, since the gang backend depends on their templates.
func kubeflowJob(s *source, spec *musterv1.TrainingJobSpec, rp kfRunPolicy) {
	backend := gangBackend(spec.Roles)
	clearScheduler(spec.Roles, backend)
	spec.Scheduling = rp.scheduling(s, backend, smallestSize(spec))
	spec.Run = rp.run
	spec.FailurePolicy.BackoffLimit = rp.backoffLimit
}
