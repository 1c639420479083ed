package kubelettest

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts Options
		want []string // lines the config must hold
		not  []string // substrings it must not hold
	}{
		{
			name: "defaults",
			opts: Options{RuntimeEndpoint: "unix:///tmp/x/c.sock"},
			want: []string{
				`containerRuntimeEndpoint: "unix:///tmp/x/c.sock"`, "cgroupDriver: cgroupfs", "failCgroupV1: false",
				"failSwapOn: false", "cgroupsPerQOS: false", "enforceNodeAllocatable: []",
				`staticPodPath: "/d/manifests"`, `podLogsDir: "/d/pod-logs"`, "readOnlyPort: 10355",
				"port: 10350", "healthzPort: 10348", "imageMinimumGCAge: 1s", `  imagefs.available: "99%"`,
				"  mode: AlwaysAllow",
			},
		},
		{
			name: "no disk pressure, longer minimum age",
			opts: Options{RuntimeEndpoint: "unix:///s", MinimumGCAge: 90 * time.Second, NoDiskPressure: true},
			want: []string{"imageMinimumGCAge: 1m30s", `  imagefs.available: "0%"`, `  nodefs.available: "0%"`,
				`  imagefs.inodesFree: "0%"`, `  nodefs.inodesFree: "0%"`, "imageGCHighThresholdPercent: 100"},
			not: []string{"99%", "imageMaximumGCAge"},
		},
		{
			name: "age-based GC",
			opts: Options{RuntimeEndpoint: "unix:///s", NoDiskPressure: true, MaximumGCAge: time.Minute},
			want: []string{"imageMinimumGCAge: 1s", "imageMaximumGCAge: 1m0s", `  imagefs.available: "0%"`},
			not:  []string{"99%"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := config("/d", tt.opts)
			lines := strings.Split(got, "\n")
			for _, w := range tt.want {
				assert.Contains(t, lines, w, "config:\n%s", got)
			}
			for _, n := range tt.not {
				assert.NotContains(t, got, n)
			}
		})
	}
}

func TestRemovingImage(t *testing.T) {
	t.Parallel()
	// A line as kubelet v1.37.2 logs it (klog text format).
	line := `I1203 17:05:41.123456    4242 image_gc_manager.go:529] "Removing image to free bytes" imageID="sha256:0123" size=512 runtimeHandler=""`
	assert.Regexp(t, RemovingImage("sha256:0123"), line)
	assert.Regexp(t, RemovingImage(""), line)
	assert.NotRegexp(t, RemovingImage("sha256:012"), line, "a prefix of the ID")
	assert.NotRegexp(t, RemovingImage("sha256:0124"), line)
	assert.Regexp(t, GCRound(), `I1203 17:05:41.100000    4242 image_gc_manager.go:460] "Attempting to delete unused images"`)
	// The end of a periodic round, as kubelet v1.37.2 logged it in
	// TestKubeletAgeGC; a failed round's line, written here in the form of
	// StartGarbageCollection's logger.Error; and one that ends nothing.
	assert.Regexp(t, GCRoundDone(), `I1204 07:37:00.307090   30784 kubelet.go:1764] "Image garbage collection succeeded"`)
	assert.Regexp(t, GCRoundDone(), `E1204 07:32:00.100000   30784 kubelet.go:1752] "Image garbage collection failed once. Stats initialization may not have completed yet" err="invalid capacity 0 on image filesystem"`)
	assert.NotRegexp(t, GCRoundDone(), `I1204 07:37:00.100000   30784 kubelet.go:1764] "Image garbage collection started"`)
}

func TestLogBufferWait(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile("round")
	l := &logBuffer{}
	_, _ = l.Write([]byte("a round\nb\nhalf a rou"))
	assert.Equal(t, []string{"a round"}, l.match(re, 0))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan []string)
	go func() {
		lines, err := l.wait(ctx, re, 2)
		assert.NoError(t, err)
		done <- lines
	}()
	_, _ = l.Write([]byte("nd\n"))
	assert.Equal(t, []string{"a round", "half a round"}, <-done)

	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	_, err := l.wait(short, re, 3)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	l.exit(errors.New("exit status 1"))
	_, err = l.wait(ctx, re, 3)
	require.ErrorIs(t, err, errExited)
}

func TestHidden(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/run/containerd/containerd.sock": true,
		"/var/run/crio/crio.sock":         true,
		"/var/lib/x.sock":                 true,
		"/run":                            true,
		"/tmp/sbp123/c.sock":              false,
		"/running/x.sock":                 false,
	} {
		assert.Equal(t, want, hidden(path), "hidden(%q)", path)
	}
}
