// Package trainingprogress turns the training progress a job's program reports
// into the job's status.progress: the report's format and its bounds, the
// percentage and the estimated completion time, when the next read is due
// and when a job has stalled. It holds pure functions of values: the
// controller reads the report from the pod and writes the status.
//
// A report is a JSON object, every field optional, unknown fields ignored
// (docs/progress.md):
//
//	{"step": 1200, "totalSteps": 10000, "epoch": 3, "totalEpochs": 10,
//	 "percent": 12.0, "samplesPerSecond": 812.5,
//	 "metrics": {"loss": 0.4312, "lr": 0.0003}}
package trainingprogress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Bounds of a report. A report over MaxReportBytes is refused whole; of
// more than MaxMetrics metrics the first MaxMetrics by name are kept, so a
// chatty program's status stays small and the same from read to read.
const (
	MaxReportBytes = 16 << 10
	MaxMetrics     = 16
	maxName        = 63
	// maxCount bounds steps and epochs: a JSON number above 2^53 is no
	// longer exact.
	maxCount = 1 << 53
)

// Report is one report of a job's program, as read.
type Report struct {
	Step             *int64             `json:"step,omitempty"`
	TotalSteps       *int64             `json:"totalSteps,omitempty"`
	Epoch            *int64             `json:"epoch,omitempty"`
	TotalEpochs      *int64             `json:"totalEpochs,omitempty"`
	Percent          *float64           `json:"percent,omitempty"`
	SamplesPerSecond *float64           `json:"samplesPerSecond,omitempty"`
	Metrics          map[string]float64 `json:"metrics,omitempty"`
}

var metricName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// Parse reads a report, and refuses one out of bounds with an error that
// names the field.
func Parse(data []byte) (Report, error) {
	var r Report
	if len(data) > MaxReportBytes {
		return r, fmt.Errorf("the report is %d bytes, over %d", len(data), MaxReportBytes)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("the report is not a JSON object of numbers: %w", err)
	}
	if d.More() {
		return Report{}, errors.New("the report has more than one JSON value")
	}
	if err := r.check(); err != nil {
		return Report{}, err
	}
	return r, nil
}

// check is the report's bounds, field by field.
func (r Report) check() error {
	for _, f := range []struct {
		name string
		v    *int64
	}{{"step", r.Step}, {"totalSteps", r.TotalSteps}, {"epoch", r.Epoch}, {"totalEpochs", r.TotalEpochs}} {
		if f.v != nil && (*f.v < 0 || *f.v > maxCount) {
			return fmt.Errorf("%s: %d is not between 0 and 2^53", f.name, *f.v)
		}
	}
	if p := r.Percent; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 100) {
		return fmt.Errorf("percent: %v is not between 0 and 100", *p)
	}
	if s := r.SamplesPerSecond; s != nil && (math.IsNaN(*s) || math.IsInf(*s, 0) || *s < 0) {
		return fmt.Errorf("samplesPerSecond: %v is not a number of 0 or more", *s)
	}
	if err := checkMetricNames(r.Metrics); err != nil {
		return err
	}
	if r.Step == nil && r.Epoch == nil && r.Percent == nil && r.SamplesPerSecond == nil && len(r.Metrics) == 0 {
		return errors.New("the report says nothing: it needs step, epoch, percent, samplesPerSecond or metrics")
	}
	return nil
}

// checkMetricNames refuses a metric name status could not hold.
func checkMetricNames(metrics map[string]float64) error {
	for name := range metrics {
		if len(name) > maxName || !metricName.MatchString(name) {
			return fmt.Errorf("metrics: %.80q is not a metric name (a letter or _, then letters, digits, _ . / -, at most %d)", name, maxName)
		}
	}
	return nil
}

// Apply is the job's progress after the report r, read from pod reporter
// at now, given the progress before (nil before the first report). A
// report that says what the one before said leaves the progress as it
// was. lastProgressTime moves only with the report's position (step,
// epoch, percent), or, for a report without one, with anything in it:
// a job whose position stands still stalls, whatever its metrics do.
func Apply(prev *musterv1.ProgressStatus, r Report, reporter string, now time.Time) *musterv1.ProgressStatus {
	next := &musterv1.ProgressStatus{
		Step: r.Step, TotalSteps: r.TotalSteps, Epoch: r.Epoch, TotalEpochs: r.TotalEpochs,
		Reporter: reporter,
		Metrics:  metrics(r.Metrics),
	}
	if r.SamplesPerSecond != nil {
		next.SamplesPerSecond = decimal(*r.SamplesPerSecond)
	}
	done, known := fraction(r)
	if known {
		next.Percent = new(int32(math.Floor(done * 100)))
	}
	if prev != nil && sameReport(prev, next) {
		return prev
	}
	moved := prev == nil || prev.LastProgressTime == nil || !samePosition(prev, next) || !hasPosition(next)
	if !moved {
		next.LastProgressTime, next.EstimatedCompletionTime = prev.LastProgressTime, prev.EstimatedCompletionTime
		return next
	}
	at := metav1.NewTime(now)
	next.LastProgressTime = &at
	next.EstimatedCompletionTime = estimate(prev, done, known, now)
	return next
}

// fraction is how much of training the report says is done, 0 to 1, and
// whether it says.
func fraction(r Report) (float64, bool) {
	switch {
	case r.Percent != nil:
		return *r.Percent / 100, true
	case r.Step != nil && r.TotalSteps != nil && *r.TotalSteps > 0:
		return min(float64(*r.Step)/float64(*r.TotalSteps), 1), true
	case r.Epoch != nil && r.TotalEpochs != nil && *r.TotalEpochs > 0:
		return min(float64(*r.Epoch)/float64(*r.TotalEpochs), 1), true
	}
	return 0, false
}

// NotBehind is whether a report puts training at least as far as the
// progress in status does (true when either says nothing of how far).
func NotBehind(prev *musterv1.ProgressStatus, r Report) bool {
	if prev == nil {
		return true
	}
	before, ok := statusFraction(prev)
	done, known := fraction(r)
	return !ok || !known || done >= before
}

// statusFraction is fraction for a progress already in status: the exact
// counts where it has them, its whole percent otherwise.
func statusFraction(p *musterv1.ProgressStatus) (float64, bool) {
	r := Report{Step: p.Step, TotalSteps: p.TotalSteps, Epoch: p.Epoch, TotalEpochs: p.TotalEpochs}
	if f, ok := fraction(r); ok {
		return f, true
	}
	if p.Percent != nil {
		return float64(*p.Percent) / 100, true
	}
	return 0, false
}

// estimate is when training will be done at the pace from the position
// before (prev, which stood there since its lastProgressTime) to done, now:
// nil without a pace, now once done.
func estimate(prev *musterv1.ProgressStatus, done float64, known bool, now time.Time) *metav1.Time {
	if !known {
		return nil
	}
	if done >= 1 {
		at := metav1.NewTime(now)
		return &at
	}
	if prev == nil || prev.LastProgressTime == nil {
		return nil
	}
	before, ok := statusFraction(prev)
	elapsed := now.Sub(prev.LastProgressTime.Time).Seconds()
	if !ok || done <= before || elapsed <= 0 {
		// The first position, training gone back to a checkpoint, or the
		// totals changed: no pace to go by yet.
		return nil
	}
	remaining := (1 - done) / ((done - before) / elapsed)
	if remaining > maxRemaining.Seconds() {
		return nil
	}
	at := metav1.NewTime(now.Add(time.Duration(remaining * float64(time.Second))).Truncate(time.Second))
	return &at
}

// maxRemaining bounds an estimate: beyond a year it says nothing useful.
const maxRemaining = 365 * 24 * time.Hour

// HasPosition is whether a report says where training is: a step, an
// epoch or a share done.
func (r Report) HasPosition() bool {
	return r.Step != nil || r.Epoch != nil || r.Percent != nil
}

// hasPosition is whether a progress says where training is.
func hasPosition(p *musterv1.ProgressStatus) bool {
	return p.Step != nil || p.Epoch != nil || p.Percent != nil
}

// samePosition is whether two progresses put training at the same place.
func samePosition(a, b *musterv1.ProgressStatus) bool {
	return eqPtr(a.Step, b.Step) && eqPtr(a.TotalSteps, b.TotalSteps) && eqPtr(a.Epoch, b.Epoch) &&
		eqPtr(a.TotalEpochs, b.TotalEpochs) && eqPtr(a.Percent, b.Percent)
}

func eqPtr[T comparable](x, y *T) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }

// sameReport is whether two progresses say the same, leaving out when
// they were read and what was derived from time.
func sameReport(a, b *musterv1.ProgressStatus) bool {
	return samePosition(a, b) && a.SamplesPerSecond == b.SamplesPerSecond && a.Reporter == b.Reporter &&
		slices.Equal(a.Metrics, b.Metrics)
}

// metrics are the report's metrics as status holds them: by name, the
// first MaxMetrics, each finite value as a decimal.
func metrics(m map[string]float64) []musterv1.ProgressMetric {
	names := slices.Sorted(maps.Keys(m))
	out := make([]musterv1.ProgressMetric, 0, min(len(names), MaxMetrics))
	for _, name := range names {
		if len(out) == MaxMetrics {
			break
		}
		if v := m[name]; !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, musterv1.ProgressMetric{Name: name, Value: decimal(v)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// decimal formats a value in at most 32 characters, with the precision a
// person reads (six significant digits).
func decimal(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Due is whether a job's report should be read now, given when it was
// last read (zero: never), and if not, how long until it should.
func Due(last time.Time, interval time.Duration, now time.Time) (bool, time.Duration) {
	if last.IsZero() {
		return true, 0
	}
	wait := last.Add(interval).Sub(now)
	return wait <= 0, max(wait, 0)
}

// Stalled is whether a job whose progress is p has stalled: it has
// reported, and stall or more has gone by since its position last moved,
// or since notBefore if that is later (a restarted attempt's start). It
// returns too when the time counts from, and if not stalled, how long
// until it would be, were nothing to move (zero: never).
func Stalled(p *musterv1.ProgressStatus, stall time.Duration, notBefore, now time.Time) (stalled bool, since time.Time, left time.Duration) {
	if stall <= 0 || p == nil || p.LastProgressTime == nil {
		return false, time.Time{}, 0
	}
	since = p.LastProgressTime.Time
	if notBefore.After(since) {
		since = notBefore
	}
	left = since.Add(stall).Sub(now)
	if left <= 0 {
		return true, since, 0
	}
	return false, since, left
}
