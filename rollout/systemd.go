package rollout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// ErrJob is Restart's error when a unit's restart job ends with a result
// other than "done" (go-systemd's results: canceled, timeout, failed,
// dependency, skipped).
var ErrJob = errors.New("rollout: systemd job not done")

// errNoAddress is Restart's error for a Systemd without an Address.
var errNoAddress = errors.New("rollout: systemd: no bus address")

// Restarter restarts systemd units on the node.
type Restarter interface {
	// Restart reloads systemd's units (the edits may add drop-ins) and
	// restarts each unit in order, waiting for each job to finish.
	Restart(ctx context.Context, units ...string) error
}

// Systemd is a [Restarter] that talks to systemd's D-Bus API on the
// node's system bus at Address ("unix:path=/host/run/dbus/system_bus_socket"),
// through github.com/coreos/go-systemd/v22/dbus.
//
// It connects as go-systemd's NewSystemConnectionContext does, on Address
// instead of the process's own system bus: EXTERNAL authentication as this
// process's uid, then Hello (dbus/dbus.go@v22.7.0 dbusAuthHelloConnection).
// It does not call Subscribe: go-systemd listens for JobRemoved from the
// start (NewConnection's AddMatch), and systemd sends a job's JobRemoved on
// the system bus to the peer that queued the job even when nobody
// subscribed (systemd src/core/dbus-unit.c bus_unit_queue_job_one calls
// bus_job_track_sender; src/core/dbus.c bus_foreach_bus sends when that
// track is not empty). The connection lives for one Restart.
type Systemd struct {
	Address string
}

// Restart implements [Restarter]: daemon-reload, then for each unit a
// restart job in mode "replace" (systemctl restart's), waiting for its
// JobRemoved. It stops at the first unit whose job is not "done" ([ErrJob]),
// whose call fails (an unknown unit: org.freedesktop.systemd1.NoSuchUnit, a
// [dbus.Error]), or when ctx ends; the error names the unit.
func (s Systemd) Restart(ctx context.Context, units ...string) error {
	if s.Address == "" {
		return errNoAddress
	}
	conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return dial(ctx, s.Address) })
	if err != nil {
		return fmt.Errorf("rollout: systemd at %s: %w", s.Address, err)
	}
	defer conn.Close()
	if err := conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("rollout: systemd daemon-reload: %w", err)
	}
	for _, unit := range units {
		// Buffered: go-systemd's jobComplete sends the result while it
		// holds the Conn's job lock, and this may have stopped waiting.
		done := make(chan string, 1)
		if _, err := conn.RestartUnitContext(ctx, unit, "replace", done); err != nil {
			return fmt.Errorf("rollout: restart %s: %w", unit, err)
		}
		select {
		case result := <-done:
			if result != "done" {
				return fmt.Errorf("%w: restart %s: result %q", ErrJob, unit, result)
			}
		case <-ctx.Done():
			return fmt.Errorf("rollout: restart %s: %w", unit, context.Cause(ctx))
		}
	}
	return nil
}

// dial connects to the bus at address, authenticated and introduced
// (Hello); the connection closes when ctx ends (godbus's WithContext).
func dial(ctx context.Context, address string) (*dbus.Conn, error) {
	conn, err := dbus.Dial(address, dbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	// The uid, not the user's name, as go-systemd does: no user lookup.
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := conn.Hello(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}
