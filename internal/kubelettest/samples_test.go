package kubelettest

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleTests are expositions and what SamplesOf reads from them; the fuzz
// target starts from them.
var sampleTests = []struct {
	name    string
	in      string   // exposition
	metric  string   // the metric asked for
	want    []Sample // nil: no samples
	wantErr bool     // an error wrapping ErrExposition
}{
	{
		name:   "shim calls",
		metric: "sandboxpin_shim_calls_total",
		in: `# HELP sandboxpin_shim_calls_total CRI calls.
# TYPE sandboxpin_shim_calls_total counter
sandboxpin_shim_calls_total{code="OK",method="/runtime.v1.RuntimeService/ListContainers"} 12
sandboxpin_shim_calls_total{code="NotFound",method="/runtime.v1.RuntimeService/ContainerStatus"} 1
sandboxpin_shim_calls_total_other 3
sandboxpin_shim_calls_totalx{code="OK"} 4
`,
		want: []Sample{
			{Labels: map[string]string{"code": "OK", "method": "/runtime.v1.RuntimeService/ListContainers"}, Value: 12},
			{Labels: map[string]string{"code": "NotFound", "method": "/runtime.v1.RuntimeService/ContainerStatus"}, Value: 1},
		},
	},
	{
		name:   "unlabelled, timestamp, exponent",
		metric: "go_goroutines",
		in:     "go_goroutines 17 1733300000000\nprocess_resident_memory_bytes 2.4576e+07\n",
		want:   []Sample{{Labels: map[string]string{}, Value: 17}},
	},
	{
		name:   "escapes, trailing comma, empty labels",
		metric: "m",
		in:     "m{a=\"x\\\"y\\\\z\\n\",} 1\nm{} +Inf\n",
		want: []Sample{
			{Labels: map[string]string{"a": "x\"y\\z\n"}, Value: 1},
			{Labels: map[string]string{}, Value: math.Inf(1)},
		},
	},
	{name: "absent", metric: "m", in: "n 1\n"},
	{name: "no value", metric: "m", in: "m{a=\"b\"}\n", wantErr: true},
	{name: "no space before the value", metric: "m", in: "m{a=\"b\"}1\n", wantErr: true},
	{name: "value not a number", metric: "m", in: "m one\n", wantErr: true},
	{name: "unterminated value", metric: "m", in: "m{a=\"b} 1\n", wantErr: true},
	{name: "unknown escape", metric: "m", in: "m{a=\"\\t\"} 1\n", wantErr: true},
	{name: "label twice", metric: "m", in: "m{a=\"1\",a=\"2\"} 1\n", wantErr: true},
	{name: "bad label name", metric: "m", in: "m{1a=\"1\"} 1\n", wantErr: true},
	{name: "no comma", metric: "m", in: "m{a=\"1\" b=\"2\"} 1\n", wantErr: true},
}

func TestSamplesOf(t *testing.T) {
	t.Parallel()
	for _, tt := range sampleTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := SamplesOf(tt.in, tt.metric)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrExposition)
				assert.Contains(t, err.Error(), "line 1, offset")
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// formatSample writes s back as a line of metric name, labels sorted.
func formatSample(name string, s Sample) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	if len(keys) > 0 {
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s.Labels[k])
			fmt.Fprintf(&b, "%s=\"%s\"", k, v)
		}
		b.WriteByte('}')
	}
	b.WriteString(" " + strconv.FormatFloat(s.Value, 'g', -1, 64))
	return b.String()
}

// FuzzSamplesOf checks that SamplesOf never panics, that its errors wrap
// ErrExposition, and that what it reads, written back, reads the same.
func FuzzSamplesOf(f *testing.F) {
	for _, tt := range sampleTests {
		f.Add(tt.in, tt.metric)
	}
	f.Fuzz(func(t *testing.T, in, metric string) {
		if metric == "" || strings.ContainsAny(metric, "{} \t\n") {
			return
		}
		got, err := SamplesOf(in, metric)
		if err != nil {
			if !errors.Is(err, ErrExposition) || got != nil {
				t.Fatalf("SamplesOf(%q, %q) = %v, %v; want nil and an error wrapping ErrExposition", in, metric, got, err)
			}
			return
		}
		lines := make([]string, len(got))
		for i, s := range got {
			lines[i] = formatSample(metric, s)
		}
		again, err := SamplesOf(strings.Join(lines, "\n"), metric)
		if err != nil {
			t.Fatalf("SamplesOf(%q) of its own output %q: %v", in, lines, err)
		}
		if len(again) != len(got) {
			t.Fatalf("SamplesOf(%q): %d samples, written back %d", in, len(got), len(again))
		}
		for i := range got {
			same := got[i].Value == again[i].Value || (math.IsNaN(got[i].Value) && math.IsNaN(again[i].Value))
			if !same || fmt.Sprint(got[i].Labels) != fmt.Sprint(again[i].Labels) {
				t.Fatalf("SamplesOf(%q)[%d] = %v, written back %q reads %v", in, i, got[i], lines[i], again[i])
			}
		}
	})
}
