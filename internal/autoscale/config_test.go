package autoscale

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDefaults(t *testing.T) {
	cases := map[string]struct {
		in, want Config
	}{
		"zero fields get defaults": {
			Config{MinReplicas: 1, MaxReplicas: 4},
			Config{MinReplicas: 1, MaxReplicas: 4, Step: 1, SamplesPerSize: 3, MinGain: 0.5, SettleSeconds: new(int32(30))},
		},
		"set fields are kept": {
			Config{MinReplicas: 2, MaxReplicas: 9, Step: 2, SamplesPerSize: 5, MinGain: 0.8, SettleSeconds: new(int32(60))},
			Config{MinReplicas: 2, MaxReplicas: 9, Step: 2, SamplesPerSize: 5, MinGain: 0.8, SettleSeconds: new(int32(60))},
		},
		"negative fields are kept for Validate to reject": {
			Config{Step: -1, SamplesPerSize: -1, MinGain: -1, SettleSeconds: new(int32(-1))},
			Config{Step: -1, SamplesPerSize: -1, MinGain: -1, SettleSeconds: new(int32(-1))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.Defaults()); diff != "" {
				t.Errorf("Defaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Config{MinReplicas: 1, MaxReplicas: 4}
	with := func(f func(*Config)) Config {
		c := ok
		f(&c)
		return c
	}
	cases := map[string]struct {
		c    Config
		want []string
	}{
		"defaults":             {ok, nil},
		"min equals max":       {with(func(c *Config) { c.MinReplicas = 4 }), nil},
		"every field set":      {Config{MinReplicas: 2, MaxReplicas: 16, Step: 4, SamplesPerSize: 20, MinGain: 1, SettleSeconds: new(int32(120))}, nil},
		"tiny gain":            {with(func(c *Config) { c.MinGain = 1e-9 }), nil},
		"zero min":             {with(func(c *Config) { c.MinReplicas = 0 }), []string{"FieldValueInvalid spec.autoscale.minReplicas"}},
		"max below min":        {with(func(c *Config) { c.MaxReplicas = 0 }), []string{"FieldValueInvalid spec.autoscale.maxReplicas"}},
		"negative step":        {with(func(c *Config) { c.Step = -1 }), []string{"FieldValueInvalid spec.autoscale.step"}},
		"negative samples":     {with(func(c *Config) { c.SamplesPerSize = -3 }), []string{"FieldValueInvalid spec.autoscale.samplesPerSize"}},
		"too many samples":     {with(func(c *Config) { c.SamplesPerSize = MaxSamplesPerSize + 1 }), []string{"FieldValueInvalid spec.autoscale.samplesPerSize"}},
		"negative gain":        {with(func(c *Config) { c.MinGain = -0.1 }), []string{"FieldValueInvalid spec.autoscale.minGain"}},
		"gain above linear":    {with(func(c *Config) { c.MinGain = 1.5 }), []string{"FieldValueInvalid spec.autoscale.minGain"}},
		"NaN gain":             {with(func(c *Config) { c.MinGain = math.NaN() }), []string{"FieldValueInvalid spec.autoscale.minGain"}},
		"infinite gain":        {with(func(c *Config) { c.MinGain = math.Inf(1) }), []string{"FieldValueInvalid spec.autoscale.minGain"}},
		"negative settle time": {with(func(c *Config) { c.SettleSeconds = new(int32(-5)) }), []string{"FieldValueInvalid spec.autoscale.settleSeconds"}},
		"zero config": {Config{}, []string{
			"FieldValueInvalid spec.autoscale.minReplicas",
		}},
		"several at once": {Config{MinReplicas: 3, MaxReplicas: 2, Step: -2}, []string{
			"FieldValueInvalid spec.autoscale.maxReplicas",
			"FieldValueInvalid spec.autoscale.step",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range tc.c.Validate(field.NewPath("spec", "autoscale")) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// settleSeconds 0 is allowed by the API and means no wait: only an unset
// value takes the default.
func TestZeroSettleIsNoWait(t *testing.T) {
	if got := *(Config{SettleSeconds: new(int32(0))}).Defaults().SettleSeconds; got != 0 {
		t.Errorf("settleSeconds 0 became %d", got)
	}
	if got := *(Config{}).Defaults().SettleSeconds; got != DefaultSettleSeconds {
		t.Errorf("unset settleSeconds became %d", got)
	}
}
