//go:build unix

package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri/fakecri"
	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// The command in front of a hostile runtime (criinfo/cri/fakecri): Info
// nested 100,000 levels deep or of 15 to 20 MiB, ListImages at and over the
// message limits. audit must exit 2 with one line that names the problem,
// serve must report sandboxpin_audit_success 0 and keep serving; neither may
// crash. They run as built binaries: a panic or a fatal error (a goroutine
// stack overflow is one) ends the process with a Go trace on stderr, which
// an in-process run would turn into a failed test binary instead.

// hostileSandbox is the sandbox image the hostile runtimes report.
const hostileSandbox = "registry.k8s.io/pause:3.10.1"

// hostileConfig is a config that parses, reporting hostileSandbox.
const hostileConfig = `{"sandboxImage":"` + hostileSandbox + `","containerdEndpoint":"/run/containerd/containerd.sock"}`

// hostileRunTimeout bounds each run of the command: dialTimeout (10 s) is
// the longest it may wait on the runtime, and a loaded 2-core machine takes
// a few seconds more for 20 MiB.
const hostileRunTimeout = time.Minute

// goTrace matches what the Go runtime prints when a program dies.
var goTrace = regexp.MustCompile(`goroutine |panic:|fatal error:|runtime\.`)

// pinnedSandbox is hostileSandbox, stored and pinned by the runtime.
var pinnedSandbox = &runtimeapi.Image{Id: "sha256:" + strings.Repeat("a", 64), RepoTags: []string{hostileSandbox}, Pinned: true}

// withSandbox returns images of size bytes in a ListImagesResponse, the
// pinned sandbox image among them.
func withSandbox(size int) []*runtimeapi.Image {
	rest := size - fakecri.ListSize([]*runtimeapi.Image{pinnedSandbox})
	return append(fakecri.ImagesOfSize(rest), pinnedSandbox)
}

// hostileRuntimes are the runtimes of the command tests.
var hostileRuntimes = []struct {
	name     string
	info     map[string]string   // StatusResponse.Info
	images   []*runtimeapi.Image // ListImages
	wantCode int                 // audit's exit code
	wantErr  string              // in audit's one line on stderr, when wantCode is exitError
}{
	{
		name:     "config 100,000 objects deep",
		info:     map[string]string{"config": fakecri.DeepObject(100_000)},
		wantCode: exitError,
		wantErr:  `RuntimeService/Status: criinfo: key "config": offset 320: runtime info nested too deeply: more than 64 levels`,
	},
	{
		name:     "config opened 100,000 times in arrays and never closed",
		info:     map[string]string{"config": `{"a":` + strings.Repeat("[", 100_000)},
		wantCode: exitError,
		wantErr:  "runtime info nested too deeply",
	},
	{
		name:     "config of 7.8 million array elements (15 MiB)",
		info:     map[string]string{"config": `{"a":[` + strings.Repeat("0,", 15<<19) + `0]}`},
		wantCode: exitError,
		wantErr:  "runtime info too large: more than 65536 JSON tokens",
	},
	{
		name:     "20 MiB of Info",
		info:     fakecri.FillerInfo(20<<20, 4<<10),
		wantCode: exitError,
		wantErr:  "runtime info too large: rpc error: code = ResourceExhausted desc = grpc: received message larger than max",
	},
	{
		name:     "ListImages of 20 MiB",
		info:     map[string]string{"config": hostileConfig},
		images:   withSandbox(20 << 20),
		wantCode: exitError,
		wantErr:  "ImageService/ListImages: rpc error: code = ResourceExhausted desc = grpc: received message larger than max (20971520 vs. 16777216)",
	},
	{
		name:     "15 MiB of Info and ListImages at gRPC's default limit",
		info:     withConfig(fakecri.FillerInfo(15<<20, 4<<10), hostileConfig),
		images:   withSandbox(4 << 20),
		wantCode: exitOK,
	},
}

// withConfig returns info with "config" set to config.
func withConfig(info map[string]string, config string) map[string]string {
	info["config"] = config
	return info
}

// runBinary runs bin with args, killing it after hostileRunTimeout (a
// failure), and returns its exit code, stdout and stderr.
func runBinary(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	killed := false
	timer := time.AfterFunc(hostileRunTimeout, func() { killed = true; _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	if !timer.Stop() || killed {
		t.Fatalf("%s still running after %v; stderr:\n%.2000s", args[0], hostileRunTimeout, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func TestHostileRuntimeAudit(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	for _, tt := range hostileRuntimes {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			endpoint := "unix://" + fakecri.Serve(t, &fakecri.Runtime{
				RuntimeName: "containerd", RuntimeVersion: "1.7.35", Info: tt.info, Images: tt.images,
			})
			start := time.Now()
			code, stdout, stderr := runBinary(t, bin, "audit", "--runtime-endpoint", endpoint, "--root", t.TempDir())
			t.Logf("exit %d after %v; stderr: %.300s", code, time.Since(start).Round(time.Millisecond), stderr)
			assert.Equal(t, tt.wantCode, code, "stderr: %.2000s", stderr)
			assert.NotRegexp(t, goTrace, stderr)
			if tt.wantCode != exitError {
				assert.Empty(t, stderr)
				assert.Contains(t, stdout, "OK: containerd pins its sandbox image "+hostileSandbox)
				return
			}
			assert.Empty(t, stdout)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %.2000s", stderr)
			assert.True(t, strings.HasPrefix(stderr, "sandboxpin audit: resolve: live runtime: cri: "+endpoint+": ") ||
				strings.HasPrefix(stderr, "sandboxpin audit: cri: "+endpoint+": "), "names the runtime: %.300s", stderr)
			assert.Contains(t, stderr, tt.wantErr)
			assert.Less(t, len(stderr), 512, "the error does not quote the runtime's answer")
		})
	}
}

// serveAddr matches the address serve logs once it listens.
var serveAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

func TestHostileRuntimeServe(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	for _, tt := range hostileRuntimes {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			endpoint := "unix://" + fakecri.Serve(t, &fakecri.Runtime{
				RuntimeName: "containerd", RuntimeVersion: "1.7.35", Info: tt.info, Images: tt.images,
			})
			stderr := &runtimetest.SyncBuffer{}
			cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--min-interval", "0", "--runtime-endpoint", endpoint, "--root", t.TempDir())
			cmd.Stderr = stderr
			require.NoError(t, cmd.Start())
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			var url string
			require.Eventually(t, func() bool {
				m := serveAddr.FindStringSubmatch(stderr.String())
				if m != nil {
					url = "http://" + m[1]
				}
				return m != nil
			}, 30*time.Second, 10*time.Millisecond, "serve did not start: %s", stderr)

			// A scrape waits at most scrapeWait (5 s) for the audit it
			// starts; the first audit of a loaded machine may take longer,
			// and until it ends there is no verdict.
			for deadline := time.Now().Add(hostileRunTimeout); ; {
				if _, ok := gauge(t, scrape(t, url), metricSuccess); ok {
					break
				}
				require.True(t, time.Now().Before(deadline), "no %s within %v; log:\n%.2000s", metricSuccess, hostileRunTimeout, stderr)
			}
			// Three scrapes more, each starting an audit (--min-interval
			// 0): the process survives each.
			for range 3 {
				fams := scrape(t, url)
				v, ok := gauge(t, fams, metricSuccess)
				require.True(t, ok)
				if tt.wantCode == exitError {
					assert.Zero(t, v, "%s", metricSuccess)
				} else {
					assert.InDelta(t, 1.0, v, 0, "%s", metricSuccess)
				}
				resp, err := http.Get(url + "/healthz") //nolint:noctx // a test against a loopback server
				require.NoError(t, err)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, "ok\n", string(body))
			}

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop within 10s of SIGTERM")
			}
			assert.Equal(t, exitOK, cmd.ProcessState.ExitCode(), "stderr: %.2000s", stderr)
			out := stderr.String()
			assert.NotRegexp(t, goTrace, out)
			if tt.wantCode == exitError {
				assert.Contains(t, out, "audit failed")
				// The log quotes the error: its quotes are escaped.
				assert.Contains(t, out, strings.ReplaceAll(tt.wantErr, `"`, `\"`))
			}
		})
	}
}
