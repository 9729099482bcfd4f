package failure

import (
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Range is an inclusive range of integers.
type Range struct {
	Min, Max int32
}

// Contains reports whether v is in r.
func (r Range) Contains(v int32) bool {
	return v >= r.Min && v <= r.Max
}

// Linux signal numbers run from 1 to 64 (31 standard and 33 real-time).
const (
	minSignal = 1
	maxSignal = 64
)

// FailurePattern maps failed pods that look alike to one completion. Every
// condition is optional; an unset one matches anything. Regular expressions
// use Go (RE2) syntax and match anywhere in the text unless anchored.
//
// The pod conditions (PodReason, PodMessage) must all match. The container
// conditions (the other five) must all match one and the same failed
// container; any failed container will do. A pattern with container
// conditions never matches a pod without a failed container.
type FailurePattern struct {
	// PodReason matches the pod's status.reason, e.g. Evicted.
	PodReason string
	// PodMessage matches the pod's status.message.
	PodMessage string
	// ContainerName matches the name of an init or main container.
	ContainerName string
	// ContainerReason matches the container's terminated reason, e.g.
	// OOMKilled or Error.
	ContainerReason string
	// ContainerMessage matches the container's terminated message, i.e. its
	// termination log or, with FallbackToLogsOnError, the tail of its log.
	ContainerMessage string
	// ExitCodes matches the container's exit code.
	ExitCodes *Range
	// Signals matches the signal that killed the container.
	Signals *Range

	// Code is the completion code of a match. It must lie outside the
	// ranges reserved for Muster (see IsReservedCode).
	Code int32
	// Phrase names Code in words.
	Phrase string
	// Attributes of a match: none (unknown), Transient, Transient and
	// Conflict, or Permanent.
	Attributes []Attribute
}

// rule is a compiled pattern. The default table also uses it, with the one
// condition users cannot set: a DisruptionTarget condition on the pod.
type rule struct {
	podReason, podMessage *regexp.Regexp
	disrupted             bool
	container             *containerRule
	result                Completion
}

// containerRule holds the conditions one failed container must all meet.
type containerRule struct {
	name, reason, message *regexp.Regexp
	exitCodes, signals    *Range
}

// ValidatePatterns checks user patterns; path is where they sit in the
// caller's object, so that the errors point at the user's fields.
func ValidatePatterns(patterns []FailurePattern, path *field.Path) field.ErrorList {
	_, errs := compilePatterns(patterns, path)
	return errs
}

// compilePatterns validates and compiles patterns in order.
func compilePatterns(patterns []FailurePattern, path *field.Path) ([]rule, field.ErrorList) {
	var (
		rules []rule
		errs  field.ErrorList
	)
	for i, p := range patterns {
		r, perrs := compilePattern(p, path.Index(i))
		errs = append(errs, perrs...)
		rules = append(rules, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return rules, nil
}

func compilePattern(p FailurePattern, path *field.Path) (rule, field.ErrorList) {
	var errs field.ErrorList
	re := func(name, expr string) *regexp.Regexp {
		if expr == "" {
			return nil
		}
		compiled, err := regexp.Compile(expr)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child(name), expr, err.Error()))
		}
		return compiled
	}
	r := rule{
		podReason:  re("podReason", p.PodReason),
		podMessage: re("podMessage", p.PodMessage),
		result: Completion{
			Code: p.Code, Phrase: p.Phrase, Type: CompletionFailed, Attributes: sortAttributes(p.Attributes),
		},
	}
	c := containerRule{
		name:      re("containerName", p.ContainerName),
		reason:    re("containerReason", p.ContainerReason),
		message:   re("containerMessage", p.ContainerMessage),
		exitCodes: p.ExitCodes,
		signals:   p.Signals,
	}
	if c != (containerRule{}) {
		r.container = &c
	}
	errs = append(errs, validateRanges(p, path)...)
	errs = append(errs, validateResult(p, path)...)
	return r, errs
}

func validateRanges(p FailurePattern, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r := p.ExitCodes; r != nil && r.Min > r.Max {
		errs = append(errs, field.Invalid(path.Child("exitCodes"), *r, "min must not exceed max"))
	}
	if r := p.Signals; r != nil {
		switch {
		case r.Min > r.Max:
			errs = append(errs, field.Invalid(path.Child("signals"), *r, "min must not exceed max"))
		case r.Min < minSignal || r.Max > maxSignal:
			errs = append(errs, field.Invalid(path.Child("signals"), *r,
				fmt.Sprintf("signals run from %d to %d", minSignal, maxSignal)))
		}
	}
	return errs
}

func validateResult(p FailurePattern, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if IsReservedCode(p.Code) {
		errs = append(errs, field.Invalid(path.Child("code"), p.Code,
			fmt.Sprintf("codes in [%d, %d] and [%d, %d] are reserved for Muster",
				reservedMusterMin, reservedMusterMax, reservedContainerMin, reservedContainerMax)))
	}
	if p.Phrase == "" {
		errs = append(errs, field.Required(path.Child("phrase"), "names the code in words"))
	}
	return append(errs, validateAttributes(p.Attributes, path.Child("attributes"))...)
}

// validateAttributes allows exactly the combinations retries understand:
// none, Transient, Transient+Conflict and Permanent.
func validateAttributes(attrs []Attribute, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range attrs {
		switch {
		case !slices.Contains(attributeOrder, a):
			errs = append(errs, field.NotSupported(path.Index(i), a, attributeOrder))
		case slices.Contains(attrs[:i], a):
			errs = append(errs, field.Duplicate(path.Index(i), a))
		}
	}
	transient := slices.Contains(attrs, AttributeTransient)
	if transient && slices.Contains(attrs, AttributePermanent) {
		errs = append(errs, field.Invalid(path, attrs, "a failure cannot be both Transient and Permanent"))
	}
	if !transient && slices.Contains(attrs, AttributeConflict) {
		errs = append(errs, field.Invalid(path, attrs, "Conflict only delays the retry of a Transient failure; add Transient"))
	}
	return errs
}
