package systemdtest_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/internal/systemdtest"
)

var errRestart = errors.New("the unit's ExecStart failed")

// TestBus drives the stand-in with go-systemd's client, as the fixer
// does: Reload, then RestartUnit with a channel for the job's result.
func TestBus(t *testing.T) {
	t.Parallel()
	systemdtest.Require(t)
	restarted := make(chan string, 4)
	bus := systemdtest.Start(t, filepath.Join(t.TempDir(), "system_bus_socket"), systemdtest.Units{
		"containerd.service": func(context.Context) error { restarted <- "containerd"; return nil },
		"kubelet.service":    func(context.Context) error { return errRestart },
	})
	conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return systemdtest.Dial(bus.Address) })
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, conn.ReloadContext(ctx))
	require.NoError(t, conn.Subscribe())

	for _, tc := range []struct {
		unit, result, errName string
	}{
		{unit: "containerd.service", result: "done"},
		{unit: "kubelet.service", result: "failed"},
		{unit: "crio.service", errName: "org.freedesktop.systemd1.NoSuchUnit"},
		{unit: "containerd", errName: "org.freedesktop.DBus.Error.InvalidArgs"},
	} {
		ch := make(chan string, 1)
		id, err := conn.RestartUnitContext(ctx, tc.unit, "replace", ch)
		if tc.errName != "" {
			var de dbus.Error
			require.ErrorAs(t, err, &de, tc.unit)
			assert.Equal(t, tc.errName, de.Name, tc.unit)
			continue
		}
		require.NoError(t, err, tc.unit)
		assert.Positive(t, id, tc.unit)
		select {
		case r := <-ch:
			assert.Equal(t, tc.result, r, tc.unit)
		case <-ctx.Done():
			t.Fatalf("%s: no JobRemoved", tc.unit)
		}
	}
	assert.Equal(t, "containerd", <-restarted)
	assert.Equal(t, []string{"containerd.service done", "kubelet.service failed",
		"crio.service org.freedesktop.systemd1.NoSuchUnit", "containerd org.freedesktop.DBus.Error.InvalidArgs"}, bus.Restarts())
	var methods []string
	for _, c := range bus.Calls() {
		methods = append(methods, c.Method)
	}
	assert.Equal(t, []string{"Reload", "Subscribe", "RestartUnit", "RestartUnit", "RestartUnit", "RestartUnit"}, methods)
}
