package autoscale

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults of the optional Config fields. A zero field means its default.
const (
	DefaultStep           int32   = 1
	DefaultSamplesPerSize int32   = 3
	DefaultMinGain        float64 = 0.5
	DefaultSettleSeconds  int32   = 30
)

// MaxSamplesPerSize bounds SamplesPerSize. The samples are kept in the
// job's status, which must stay small; beyond a handful, more samples of a
// noisy metric buy little that the median does not already give.
const MaxSamplesPerSize int32 = 20

// MaxSizes is how many sizes State.Sizes remembers, the newest last. A
// decision needs only the current size and the last good one, which are
// always the two newest; the rest is history for whoever reads the status.
const MaxSizes = 8

// Config is how the autoscaler explores the elastic role's size.
type Config struct {
	// MinReplicas and MaxReplicas bound every size the autoscaler asks for.
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
	// Step is how many workers each scale-up adds (clamped to
	// MaxReplicas). 0 means DefaultStep.
	Step int32 `json:"step,omitempty"`
	// SamplesPerSize is how many valid throughput samples are taken at a
	// size before judging it. 0 means DefaultSamplesPerSize.
	SamplesPerSize int32 `json:"samplesPerSize,omitempty"`
	// MinGain is the fraction of the current average worker's throughput
	// that each added worker must bring for a scale-up to pay off; 1 asks
	// for linear scaling. 0 means DefaultMinGain (to accept almost any
	// gain, give a small positive value).
	MinGain float64 `json:"minGain,omitempty"`
	// SettleSeconds is how long after a resize the world is left to
	// re-form: samples and pending pods seen sooner are ignored. Nil means
	// DefaultSettleSeconds; 0 is no wait at all.
	SettleSeconds *int32 `json:"settleSeconds,omitempty"`
}

// Defaults returns c with each zero optional field set to its default.
// Bounds have no default: only the job knows them.
func (c Config) Defaults() Config {
	if c.Step == 0 {
		c.Step = DefaultStep
	}
	if c.SamplesPerSize == 0 {
		c.SamplesPerSize = DefaultSamplesPerSize
	}
	if c.MinGain == 0 {
		c.MinGain = DefaultMinGain
	}
	if c.SettleSeconds == nil {
		c.SettleSeconds = new(DefaultSettleSeconds)
	}
	return c
}

// Validate checks c as Decide uses it, after Defaults, so a zero optional
// field is valid. path is where the config sits in the caller's object.
func (c Config) Validate(path *field.Path) field.ErrorList {
	d := c.Defaults()
	var errs field.ErrorList
	if d.MinReplicas < 1 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), d.MinReplicas, "must be at least 1"))
	}
	if d.MaxReplicas < d.MinReplicas {
		errs = append(errs, field.Invalid(path.Child("maxReplicas"), d.MaxReplicas, "must not be below minReplicas"))
	}
	if d.Step < 1 {
		errs = append(errs, field.Invalid(path.Child("step"), d.Step, "must be at least 1"))
	}
	if d.SamplesPerSize < 1 || d.SamplesPerSize > MaxSamplesPerSize {
		errs = append(errs, field.Invalid(path.Child("samplesPerSize"), d.SamplesPerSize, fmt.Sprintf("must be between 1 and %d", MaxSamplesPerSize)))
	}
	// An added worker can at best match the average worker (linear
	// scaling), so above 1 nothing would ever pay off.
	if math.IsNaN(d.MinGain) || d.MinGain <= 0 || d.MinGain > 1 {
		errs = append(errs, field.Invalid(path.Child("minGain"), d.MinGain, "must be above 0 and at most 1"))
	}
	if *d.SettleSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("settleSeconds"), *d.SettleSeconds, "must not be negative"))
	}
	return errs
}
