//go:build unix

package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silentRuntime listens on a unix socket, accepts connections and never
// answers: a runtime that hangs. Each accepted connection is sent on the
// returned channel.
func silentRuntime(t *testing.T) (endpoint string, accepted <-chan struct{}) {
	t.Helper()
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "sp")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ch := make(chan struct{}, 16)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "unix://" + sock, ch
}

// TestSignals runs the built command blocked in various states and sends
// it SIGINT or SIGTERM: it must end within a second every time. The cases
// run one after another, so that they do not load the machine for each
// other while timed.
func TestSignals(t *testing.T) { //nolint:tparallel // the cases are timed: one at a time, so that they do not load the machine for each other
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	manyRefs := make([]string, 0, 20_000)
	for i := range 20_000 {
		manyRefs = append(manyRefs, "registry.example.com/team/image:"+strings.Repeat("1", 8)+"-"+string(rune('a'+i%26)))
	}
	tests := []struct {
		name string
		// start returns the command, ready to start, and a channel that is
		// closed (or sent on) once the command is blocked.
		start func(t *testing.T) (*exec.Cmd, <-chan struct{})
	}{
		{
			name: "resolve waiting for a runtime that never answers",
			start: func(t *testing.T) (*exec.Cmd, <-chan struct{}) {
				e, acc := silentRuntime(t)
				return exec.Command(bin, "resolve", "--root", t.TempDir(), "--runtime-endpoint", e), acc
			},
		},
		{
			name: "audit waiting for a runtime that never answers",
			start: func(t *testing.T) (*exec.Cmd, <-chan struct{}) {
				e, acc := silentRuntime(t)
				return exec.Command(bin, "audit", "--root", t.TempDir(), "--runtime-endpoint", e), acc
			},
		},
		{
			name: "check --resolve waiting for a runtime that never answers",
			start: func(t *testing.T) (*exec.Cmd, <-chan struct{}) {
				e, acc := silentRuntime(t)
				return exec.Command(bin, "check", "--resolve", "--root", t.TempDir(), "--runtime-endpoint", e, "registry.k8s.io/pause:3.10"), acc
			},
		},
		{
			name: "normalize writing to a pipe nobody reads",
			start: func(t *testing.T) (*exec.Cmd, <-chan struct{}) {
				cmd := exec.Command(bin, append([]string{"normalize"}, manyRefs...)...)
				r, w, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
				cmd.Stdout = w
				// Only the first byte is read: it shows the command past its
				// start (its signal handler set; a timer did not, on a loaded
				// CI machine: SIGTERM came first and killed it), and its
				// writes block once the pipe is full.
				ready := make(chan struct{})
				go func() {
					if _, err := r.Read(make([]byte, 1)); err == nil {
						close(ready)
					}
				}()
				return cmd, ready
			},
		},
	}
	for _, tt := range tests {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(tt.name+"/"+sig.String(), func(t *testing.T) {
				cmd, blocked := tt.start(t)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				require.NoError(t, cmd.Start())
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case <-blocked:
				case err := <-exited:
					t.Fatalf("the command ended before it blocked: %v\n%s", err, stderr.String())
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatal("the command did not reach the blocked state")
				}
				sent := time.Now()
				require.NoError(t, cmd.Process.Signal(sig))
				select {
				case err := <-exited:
					took := time.Since(sent)
					t.Logf("ended %v after %v: %v", took.Round(time.Millisecond), sig, err)
					assert.Less(t, took, time.Second)
					assert.Equal(t, exitError, cmd.ProcessState.ExitCode(), "stderr: %s", stderr.String())
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("still running 5s after %v (then killed: %v)", sig, <-exited)
				}
			})
		}
	}
}

// TestHostileRootCLI: the built command refuses a FIFO, and ignores a link
// out of the root, by itself and promptly.
func TestHostileRootCLI(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	parent := t.TempDir()
	outside := filepath.Join(parent, "host.toml")
	require.NoError(t, os.WriteFile(outside, []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"sentinel.example/escaped:1\"\n"), 0o600))

	fifoRoot := filepath.Join(parent, "fifo")
	require.NoError(t, os.MkdirAll(filepath.Join(fifoRoot, "etc/containerd"), 0o750))
	require.NoError(t, syscall.Mkfifo(filepath.Join(fifoRoot, "etc/containerd/config.toml"), 0o600))

	linkRoot := filepath.Join(parent, "link")
	require.NoError(t, os.MkdirAll(filepath.Join(linkRoot, "etc/containerd"), 0o750))
	require.NoError(t, os.Symlink(outside, filepath.Join(linkRoot, "etc/containerd/config.toml")))

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in stdout or stderr
		notWant  string
	}{
		{"FIFO", []string{"resolve", "--root", fifoRoot}, exitError, "/etc/containerd/config.toml: invalid configuration: not a regular file: it is a named pipe (FIFO)", ""},
		{"link to the host", []string{"resolve", "--root", linkRoot, "-o", "json"}, exitUnknown, `"sandboxImage": ""`, "sentinel.example"},
		{"missing root", []string{"resolve", "--root", filepath.Join(parent, "typo")}, exitError, "--root: stat", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			require.NoError(t, cmd.Start())
			timer := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
			_ = cmd.Wait()
			timer.Stop()
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Equal(t, tt.wantCode, cmd.ProcessState.ExitCode(), "stderr: %s", stderr.String())
			assert.Contains(t, stdout.String()+stderr.String(), tt.want)
			if tt.notWant != "" {
				assert.NotContains(t, stdout.String()+stderr.String(), tt.notWant)
			}
		})
	}
}

// TestServeStopMidScrape stops serve with SIGTERM while a scrape's request
// is still arriving: the clean stop waits for it for shutdownWait, and must
// finish before the process's exit grace runs out, so serve exits 0, within
// a second.
func TestServeStopMidScrape(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sandboxpin")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	e, _ := silentRuntime(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--min-interval", "0", "--root", t.TempDir(), "--runtime-endpoint", e)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	addr := make(chan string, 1)
	var log bytes.Buffer
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if _, a, ok := strings.Cut(sc.Text(), "msg=serving addr="); ok {
				addr <- strings.Fields(a)[0]
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/metrics"
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start")
	}
	// A scrape whose request is still arriving: the HTTP server waits for
	// it until shutdownWait, as for any request in flight.
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n"))
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		took := time.Since(sent)
		<-logged
		t.Logf("Wait: %v", err)
		t.Logf("ended %v after SIGTERM", took.Round(time.Millisecond))
		assert.Less(t, took, time.Second)
		assert.Equal(t, exitOK, cmd.ProcessState.ExitCode(), "a clean stop; log:\n%s", log.String())
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5s after SIGTERM")
	}
}
