package failure

import "slices"

// CompletionType says whether a task or an attempt succeeded.
type CompletionType string

// Completion types.
const (
	CompletionSucceeded CompletionType = "Succeeded"
	CompletionFailed    CompletionType = "Failed"
)

// Attribute qualifies a failure so that retries can be decided without
// knowing the program. A failure with neither Transient nor Permanent is
// "unknown" and is handled by the plain retry budget.
type Attribute string

// Failure attributes.
const (
	// AttributeTransient: a retry is expected to end differently, e.g. the
	// node was lost. Retried without spending the budget when failures are
	// classified.
	AttributeTransient Attribute = "Transient"
	// AttributePermanent: every retry is expected to end the same way, e.g.
	// the command does not exist. Never retried when failures are
	// classified.
	AttributePermanent Attribute = "Permanent"
	// AttributeConflict: the failure came from competing for resources,
	// e.g. a gang that could not be placed in time. Only meaningful with
	// Transient: a job-level retry is then delayed so that competing jobs
	// do not collide again at once.
	AttributeConflict Attribute = "Conflict"
)

// attributeOrder is the order attributes are listed in, so that equal
// completions compare equal.
var attributeOrder = []Attribute{AttributeTransient, AttributePermanent, AttributeConflict}

// Completion is how a task attempt (or a whole attempt of a job) ended.
type Completion struct {
	// Code identifies the outcome; see the code table in codes.go.
	Code int32
	// Phrase names Code in words, e.g. ContainerOOMKilled.
	Phrase string
	// Type is Succeeded or Failed.
	Type CompletionType
	// Attributes qualify a failure; empty means unknown.
	Attributes []Attribute
	// Diagnostics lists the observed fields that decided Code, and only
	// those, so that a reader sees why without the noise.
	Diagnostics string
	// Container is the container Code was taken from, if any.
	Container string
}

// Has reports whether c carries attribute a.
func (c Completion) Has(a Attribute) bool {
	return slices.Contains(c.Attributes, a)
}

// Failed reports whether c is a failure. Anything not explicitly Succeeded
// counts as failed, so that a zero Completion is never taken for success.
func (c Completion) Failed() bool {
	return c.Type != CompletionSucceeded
}

// Unknown reports whether c is a failure that is neither Transient nor
// Permanent.
func (c Completion) Unknown() bool {
	return c.Failed() && !c.Has(AttributeTransient) && !c.Has(AttributePermanent)
}

// sortAttributes returns attrs in the canonical order, without duplicates.
func sortAttributes(attrs []Attribute) []Attribute {
	var out []Attribute
	for _, a := range attributeOrder {
		if slices.Contains(attrs, a) {
			out = append(out, a)
		}
	}
	return out
}
