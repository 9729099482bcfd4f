package failure

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/internal/text"
)

// PodEnd describes how a pod ended, with just what classification reads.
// PodEndOf builds one from a Pod.
type PodEnd struct {
	// Phase is the pod's phase. Succeeded is success; any other phase is
	// classified as a failure.
	Phase corev1.PodPhase
	// Reason and Message are the pod's status.reason and status.message.
	Reason, Message string
	// Disruption is set when the pod has a DisruptionTarget condition that
	// is True: the scheduler, the API or the kubelet chose to end it.
	Disruption *Disruption
	// InitContainers and Containers hold the containers that terminated.
	InitContainers, Containers []ContainerEnd
	// Vanished is set when the pod was deleted before it ended.
	Vanished bool
}

// Disruption is a pod's DisruptionTarget condition.
type Disruption struct {
	Reason, Message string
}

// ContainerEnd is one terminated container.
type ContainerEnd struct {
	Name     string
	ExitCode int32
	// Signal is the signal that killed the container, when the runtime
	// reports it. When it does not, SignalOf derives it from the exit code.
	Signal          int32
	Reason, Message string
	FinishedAt      time.Time
}

// SignalOf is the signal that killed c: the reported one, or else the one a
// shell encodes in exit codes 129 to 159 (128 + a standard signal).
func SignalOf(c ContainerEnd) int32 {
	if c.Signal != 0 {
		return c.Signal
	}
	if c.ExitCode >= 129 && c.ExitCode <= 159 {
		return c.ExitCode - 128
	}
	return 0
}

// failedContainer reports whether c ended in failure.
func failedContainer(c ContainerEnd) bool {
	return c.ExitCode != 0 || c.Signal != 0
}

// Classifier turns ended pods into completions. The zero Classifier applies
// Muster's tables only.
type Classifier struct {
	user []rule
}

// NewClassifier returns a classifier that tries patterns, in order, before
// the default table. path is where the patterns sit in the caller's object.
func NewClassifier(patterns []FailurePattern, path *field.Path) (Classifier, field.ErrorList) {
	rules, errs := compilePatterns(patterns, path)
	if len(errs) > 0 {
		return Classifier{}, errs
	}
	return Classifier{user: rules}, nil
}

// Classify says how the pod ended. The order is:
//  1. a vanished pod: PodDeletedExternally;
//  2. phase Succeeded: Succeeded;
//  3. a container exiting 200, 201 or 210: the program said what kind of
//     failure it hit, and no pattern may overrule it (as in
//     FrameworkController, where these come before any configured pattern);
//  4. the user's patterns, then the default table; the first match wins;
//  5. no failed container: PodFailedWithoutFailedContainer;
//  6. otherwise the exit code of the failed container that finished first,
//     with no attributes.
//
// Step 6 takes the first failure where FrameworkController takes the last:
// when one process of a job dies its peers and sidecars usually die of it
// moments later, so the first failure is the cause and the rest are echoes.
func (c Classifier) Classify(end PodEnd) Completion {
	if end.Vanished {
		return mustPredefined(CodePodDeletedExternally, "the pod was deleted before it ended")
	}
	if end.Phase == corev1.PodSucceeded {
		return mustPredefined(CodeSucceeded, "")
	}
	failed := failedContainers(end)
	for _, table := range [][]rule{contractRules, c.user, defaultRules} {
		for _, r := range table {
			if out, ok := r.match(end, failed); ok {
				return out
			}
		}
	}
	if len(failed) == 0 {
		var d diagnostics
		d.add("pod reason", end.Reason)
		d.add("pod message", end.Message)
		return mustPredefined(CodePodFailedWithoutFailedContainer, d.String())
	}
	first := failed[0]
	code := first.ExitCode
	if code == 0 {
		// Killed by a signal the runtime reported without an exit code:
		// report it the way a shell would.
		code = 128 + first.Signal
	}
	var d diagnostics
	d.container(first, true, true, true, true)
	return Completion{
		Code: code, Phrase: PhraseContainerUnrecognizedFailed, Type: CompletionFailed,
		Diagnostics: d.String(), Container: first.Name,
	}
}

// failedContainers lists the failed init and main containers, the first to
// finish first. Ties keep init containers ahead, in declaration order,
// because init containers run before the others.
func failedContainers(end PodEnd) []ContainerEnd {
	var out []ContainerEnd
	for _, group := range [][]ContainerEnd{end.InitContainers, end.Containers} {
		for _, c := range group {
			if failedContainer(c) {
				out = append(out, c)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].FinishedAt.Before(out[j].FinishedAt) })
	return out
}

// match reports whether r matches the pod, and the completion it gives.
// failed must be in the order of failedContainers, so that of several
// matching containers the first to fail is named.
func (r rule) match(end PodEnd, failed []ContainerEnd) (Completion, bool) {
	var d diagnostics
	if !matches(r.podReason, end.Reason) || !matches(r.podMessage, end.Message) {
		return Completion{}, false
	}
	if r.podReason != nil {
		d.add("pod reason", end.Reason)
	}
	if r.podMessage != nil {
		d.add("pod message", end.Message)
	}
	if r.disrupted {
		if end.Disruption == nil {
			return Completion{}, false
		}
		d.add("disruption reason", end.Disruption.Reason)
		d.add("disruption message", end.Disruption.Message)
	}
	out := r.result
	out.Attributes = append([]Attribute(nil), r.result.Attributes...)
	if cr := r.container; cr != nil {
		i := slices.IndexFunc(failed, cr.matches)
		if i < 0 {
			return Completion{}, false
		}
		d.container(failed[i], cr.exitCodes != nil, cr.signals != nil, cr.reason != nil, cr.message != nil)
		out.Container = failed[i].Name
	}
	out.Diagnostics = d.String()
	return out, true
}

// matches reports whether c meets every condition of cr.
func (cr *containerRule) matches(c ContainerEnd) bool {
	return matches(cr.name, c.Name) && matches(cr.reason, c.Reason) && matches(cr.message, c.Message) &&
		inRange(cr.exitCodes, c.ExitCode) && inRange(cr.signals, SignalOf(c))
}

// matches treats an unset expression as matching anything.
func matches(re *regexp.Regexp, s string) bool {
	return re == nil || re.MatchString(s)
}

// inRange treats an unset range as matching anything.
func inRange(r *Range, v int32) bool {
	return r == nil || r.Contains(v)
}

// maxDiagnosticText bounds each message quoted in diagnostics: a container
// message can be a whole log tail, and a status is not the place for it.
const maxDiagnosticText = 256

// diagnostics collects "field value" parts, separated by "; ".
type diagnostics struct {
	parts []string
}

// add records a text field; empty values say nothing and are left out.
func (d *diagnostics) add(name, value string) {
	if value != "" {
		d.parts = append(d.parts, fmt.Sprintf("%s %q", name, shorten(value)))
	}
}

// container records c's name and the fields asked for.
func (d *diagnostics) container(c ContainerEnd, code, signal, reason, message bool) {
	d.parts = append(d.parts, fmt.Sprintf("container %q", c.Name))
	if code {
		d.parts = append(d.parts, fmt.Sprintf("exit code %d", c.ExitCode))
	}
	if sig := SignalOf(c); signal && sig != 0 {
		d.parts = append(d.parts, fmt.Sprintf("signal %d", sig))
	}
	if reason {
		d.add("reason", c.Reason)
	}
	if message {
		d.add("message", c.Message)
	}
}

func (d *diagnostics) String() string {
	return strings.Join(d.parts, "; ")
}

// shorten cuts a text quoted in diagnostics to maxDiagnosticText bytes.
func shorten(s string) string { return text.Head(s, maxDiagnosticText) }

// PermanentExitCodes are the exit codes, 1 to 255, that c classifies
// Permanent when a container ends with one and nothing else is known: a
// pod that restarts in place lets these end it rather than restart it, so
// that a failure that would end the same is not run again while the
// operator decides.
//
// Without patterns of the user's the answer is the same for every job, and
// a plan that makes pods asks for it: it is worked out once (255
// classifications, each with its diagnostics, cost a plan more than all
// else it does).
func (c Classifier) PermanentExitCodes() []int32 {
	if len(c.user) == 0 {
		return slices.Clone(defaultPermanentExitCodes())
	}
	return c.permanentExitCodes()
}

var defaultPermanentExitCodes = sync.OnceValue(Classifier{}.permanentExitCodes)

func (c Classifier) permanentExitCodes() []int32 {
	var out []int32
	for code := int32(1); code <= 255; code++ {
		end := PodEnd{Phase: corev1.PodFailed, Containers: []ContainerEnd{{Name: "main", ExitCode: code}}}
		if slices.Contains(c.Classify(end).Attributes, AttributePermanent) {
			out = append(out, code)
		}
	}
	return out
}
