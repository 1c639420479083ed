package rollout

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/systemdtest"
)

var errExecStart = errors.New("ExecStart exited 1")

// TestSystemdRestart restarts units through go-systemd against a real
// dbus-daemon and systemdtest's stand-in for systemd's manager.
func TestSystemdRestart(t *testing.T) {
	t.Parallel()
	systemdtest.Require(t)
	tests := []struct {
		name     string
		units    []string      // Restart's
		timeout  time.Duration // ctx's
		restarts []string      // the RestartUnit calls with their results
		wantErr  error         // errors.Is, nil for none
		dbusErr  string        // or the name of the dbus.Error
		errHas   string        // in the error
	}{
		{
			name: "in order", units: []string{"containerd.service", "kubelet.service"},
			restarts: []string{"containerd.service done", "kubelet.service done"},
		},
		{name: "none: a reload only"},
		{
			name: "failed: stops there", units: []string{"broken.service", "kubelet.service"},
			restarts: []string{"broken.service failed"}, wantErr: ErrJob, errHas: `restart broken.service: result "failed"`,
		},
		{
			name: "unknown unit", units: []string{"containerd.service", "crio.service", "kubelet.service"},
			restarts: []string{"containerd.service done", "crio.service org.freedesktop.systemd1.NoSuchUnit"},
			dbusErr:  "org.freedesktop.systemd1.NoSuchUnit", errHas: "restart crio.service",
		},
		{
			name: "ctx ends while the job runs", units: []string{"hung.service", "kubelet.service"}, timeout: time.Second,
			restarts: []string{"hung.service "}, wantErr: context.DeadlineExceeded, errHas: "restart hung.service",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			running := make(chan struct{}, 1) // full while a unit's job runs
			run := func(name string, err error) func(context.Context) error {
				return func(context.Context) error {
					select {
					case running <- struct{}{}:
					default:
						t.Errorf("%s restarted while another unit's job ran", name)
					}
					time.Sleep(50 * time.Millisecond)
					<-running
					return err
				}
			}
			bus := systemdtest.Start(t, filepath.Join(t.TempDir(), "system_bus_socket"), systemdtest.Units{
				"containerd.service": run("containerd", nil),
				"kubelet.service":    run("kubelet", nil),
				"broken.service":     run("broken", errExecStart),
				"hung.service":       func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			})
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()

			err := Systemd{Address: bus.Address}.Restart(ctx, tt.units...)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.dbusErr != "":
				var de dbus.Error
				require.ErrorAs(t, err, &de)
				assert.Equal(t, tt.dbusErr, de.Name)
			default:
				require.NoError(t, err)
			}
			if err != nil {
				assert.ErrorContains(t, err, tt.errHas)
			}
			assert.Equal(t, tt.restarts, bus.Restarts())
			methods := []string{}
			for _, c := range bus.Calls() {
				methods = append(methods, c.Method)
			}
			require.NotEmpty(t, methods)
			assert.Equal(t, "Reload", methods[0], "daemon-reload first: %v", methods)
			assert.NotContains(t, methods, "Subscribe")
			for _, c := range bus.Calls()[1:] {
				assert.Equal(t, "replace", c.Args[1], "mode of %v", c)
			}
		})
	}
}

func TestSystemdRestartNoBus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	assert.ErrorIs(t, Systemd{}.Restart(ctx, "containerd.service"), errNoAddress)
	address := "unix:path=" + filepath.Join(t.TempDir(), "none")
	err := Systemd{Address: address}.Restart(ctx, "containerd.service")
	require.Error(t, err)
	assert.ErrorContains(t, err, "systemd at "+address)
}
