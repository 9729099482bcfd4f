package trainingprogress

import (
	"fmt"
	"strings"
	"testing"
	"time"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func mustParse(t *testing.T, s string) Report {
	t.Helper()
	r, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return r
}

func TestParseRefusesWhatIsOutOfBoundsNamingTheField(t *testing.T) {
	many := make([]string, 0, 2000)
	for i := range 2000 {
		many = append(many, fmt.Sprintf(`"m%04d": 1`, i))
	}
	for _, c := range []struct{ in, want string }{
		{`{"step": -1}`, "step: -1"},
		{`{"totalSteps": 9007199254740993}`, "totalSteps"},
		{`{"epoch": 1.5}`, "not a JSON object of numbers"},
		{`{"percent": 101}`, "percent: 101"},
		{`{"samplesPerSecond": -3}`, "samplesPerSecond: -3"},
		{`{"metrics": {"lo ss": 1}}`, `metrics: "lo ss"`},
		{`{"metrics": {"` + strings.Repeat("a", 64) + `": 1}}`, "metrics:"},
		{`{"metrics": {"loss": "low"}}`, "not a JSON object of numbers"},
		{`{"step": NaN}`, "not a JSON object of numbers"},
		{`{}`, "says nothing"},
		{`{"step": 1} {"step": 2}`, "more than one"},
		{`[1]`, "not a JSON object"},
		{`{"metrics": {` + strings.Join(many, ",") + `}}`, "over 16384"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60s) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	r := mustParse(t, `{"step": 5, "loss": 1, "future": {"x": 1}}`)
	if r.Step == nil || *r.Step != 5 {
		t.Errorf("unknown fields: %+v", r)
	}
}

func TestApplyDerivesPercentAndPaceETA(t *testing.T) {
	p := Apply(nil, mustParse(t, `{"step": 100, "totalSteps": 1000, "metrics": {"loss": 2.5}}`), "job-worker-0", t0)
	if *p.Percent != 10 || p.EstimatedCompletionTime != nil || !p.LastProgressTime.Time.Equal(t0) || p.Reporter != "job-worker-0" {
		t.Fatalf("first report: %+v", p)
	}
	// 100 steps in 60 s: the 800 left take 480 s.
	p = Apply(p, mustParse(t, `{"step": 200, "totalSteps": 1000, "metrics": {"loss": 2.1}}`), "job-worker-0", t0.Add(time.Minute))
	if *p.Percent != 20 || p.EstimatedCompletionTime == nil || !p.EstimatedCompletionTime.Time.Equal(t0.Add(time.Minute+480*time.Second)) {
		t.Fatalf("second report: percent %d, eta %v", *p.Percent, p.EstimatedCompletionTime)
	}
	if len(p.Metrics) != 1 || p.Metrics[0] != (musterv1.ProgressMetric{Name: "loss", Value: "2.1"}) {
		t.Errorf("metrics: %+v", p.Metrics)
	}
	// The same report again: the same progress, nothing to write.
	if q := Apply(p, mustParse(t, `{"step": 200, "totalSteps": 1000, "metrics": {"loss": 2.1}}`), "job-worker-0", t0.Add(2*time.Minute)); q != p {
		t.Errorf("an unchanged report changed the progress: %+v", q)
	}
	// Metrics alone moved: the position did not, so neither did its time.
	q := Apply(p, mustParse(t, `{"step": 200, "totalSteps": 1000, "metrics": {"loss": 2.0}}`), "job-worker-0", t0.Add(2*time.Minute))
	if !q.LastProgressTime.Equal(p.LastProgressTime) || !q.EstimatedCompletionTime.Equal(p.EstimatedCompletionTime) || q.Metrics[0].Value != "2" {
		t.Errorf("metrics-only report: %+v", q)
	}
	// The pace counts from when the position last moved (t0+1m), not from
	// the metrics-only report: 100 steps in 120 s, 700 left take 840 s.
	q = Apply(q, mustParse(t, `{"step": 300, "totalSteps": 1000}`), "job-worker-0", t0.Add(3*time.Minute))
	if want := t0.Add(3*time.Minute + 840*time.Second); !q.EstimatedCompletionTime.Time.Equal(want) {
		t.Errorf("eta %v, want %v", q.EstimatedCompletionTime, want)
	}
	// Back to a checkpoint: no pace.
	q = Apply(q, mustParse(t, `{"step": 250, "totalSteps": 1000}`), "job-worker-1", t0.Add(4*time.Minute))
	if q.EstimatedCompletionTime != nil || *q.Percent != 25 || q.Reporter != "job-worker-1" {
		t.Errorf("after going back: %+v", q)
	}
	// Done: percent 100, the estimate is now.
	q = Apply(q, mustParse(t, `{"step": 1000, "totalSteps": 1000}`), "job-worker-1", t0.Add(5*time.Minute))
	if *q.Percent != 100 || !q.EstimatedCompletionTime.Time.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("done: %+v", q)
	}
}

func TestApplyFractionSources(t *testing.T) {
	for _, c := range []struct {
		in   string
		want *int32
	}{
		{`{"percent": 42.9, "step": 1, "totalSteps": 2}`, new(int32(42))}, // reported percent wins
		{`{"step": 999, "totalSteps": 1000}`, new(int32(99))},             // floored: 100 only when done
		{`{"step": 5000, "totalSteps": 1000}`, new(int32(100))},
		{`{"epoch": 3, "totalEpochs": 4}`, new(int32(75))},
		{`{"step": 3, "totalSteps": 0}`, nil},
		{`{"step": 3}`, nil},
		{`{"samplesPerSecond": 812.5}`, nil},
	} {
		p := Apply(nil, mustParse(t, c.in), "p", t0)
		if (p.Percent == nil) != (c.want == nil) || (p.Percent != nil && *p.Percent != *c.want) {
			t.Errorf("%s: percent %v, want %v", c.in, p.Percent, c.want)
		}
	}
	if p := Apply(nil, mustParse(t, `{"samplesPerSecond": 812.5}`), "p", t0); p.SamplesPerSecond != "812.5" {
		t.Errorf("samplesPerSecond %q", p.SamplesPerSecond)
	}
}

func TestApplyKeepsTheFirstMetricsByName(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"metrics": {`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"m%02d": %d.123456789`, 39-i, i)
	}
	b.WriteString(`}}`)
	p := Apply(nil, mustParse(t, b.String()), "p", t0)
	if len(p.Metrics) != MaxMetrics || p.Metrics[0].Name != "m00" || p.Metrics[MaxMetrics-1].Name != "m15" {
		t.Fatalf("metrics: %+v", p.Metrics)
	}
	for _, m := range p.Metrics {
		if len(m.Value) > 32 {
			t.Errorf("value %q is too long for status", m.Value)
		}
	}
	// A report without a position moves with anything in it.
	q := Apply(p, mustParse(t, `{"metrics": {"m00": 7}}`), "p", t0.Add(time.Minute))
	if !q.LastProgressTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("a metrics-only job did not move: %+v", q.LastProgressTime)
	}
}

func TestDueAndStalled(t *testing.T) {
	if due, _ := Due(time.Time{}, 30*time.Second, t0); !due {
		t.Error("never read: due")
	}
	if due, wait := Due(t0, 30*time.Second, t0.Add(10*time.Second)); due || wait != 20*time.Second {
		t.Errorf("read 10 s ago: due %v, wait %v", due, wait)
	}
	if due, _ := Due(t0, 30*time.Second, t0.Add(30*time.Second)); !due {
		t.Error("read an interval ago: due")
	}

	p := Apply(nil, mustParse(t, `{"step": 1}`), "p", t0)
	if stalled, _, wait := Stalled(p, 0, time.Time{}, t0.Add(time.Hour)); stalled || wait != 0 {
		t.Error("no stall time: never stalls")
	}
	if stalled, _, wait := Stalled(nil, time.Minute, time.Time{}, t0.Add(time.Hour)); stalled || wait != 0 {
		t.Error("a job that never reported does not stall")
	}
	if stalled, _, wait := Stalled(p, 10*time.Minute, time.Time{}, t0.Add(4*time.Minute)); stalled || wait != 6*time.Minute {
		t.Errorf("4 of 10 minutes: stalled %v, wait %v", stalled, wait)
	}
	if stalled, _, _ := Stalled(p, 10*time.Minute, time.Time{}, t0.Add(10*time.Minute)); !stalled {
		t.Error("10 of 10 minutes: stalled")
	}
	// Metrics moving do not keep a job from stalling.
	q := Apply(p, mustParse(t, `{"step": 1, "metrics": {"loss": 3}}`), "p", t0.Add(9*time.Minute))
	if stalled, _, _ := Stalled(q, 10*time.Minute, time.Time{}, t0.Add(11*time.Minute)); !stalled {
		t.Error("a job whose step stood still for 11 minutes has stalled")
	}
	// A later attempt's start counts instead: the restarted job has its
	// whole time again.
	if stalled, since, wait := Stalled(q, 10*time.Minute, t0.Add(8*time.Minute), t0.Add(11*time.Minute)); stalled || !since.Equal(t0.Add(8*time.Minute)) || wait != 7*time.Minute {
		t.Errorf("after a restart at 8 minutes: stalled %v, since %v, wait %v", stalled, since, wait)
	}
}
