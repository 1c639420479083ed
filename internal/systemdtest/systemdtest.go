// Package systemdtest stands in for systemd's D-Bus API in tests: a real
// dbus-daemon on a unix socket of the test's, and on it a service that owns
// org.freedesktop.systemd1 and answers the few calls of its Manager
// interface (org.freedesktop.systemd1.Manager at /org/freedesktop/systemd1)
// that a client restarting units makes: Reload, RestartUnit, Subscribe and
// Unsubscribe, with the JobRemoved signal when a job ends.
//
// What it stands in for is systemd executing units: a RestartUnit here
// calls the test's restart function, which does what the unit's
// ExecStop/ExecStart would. Left untested by it: systemd's own unit
// loading (a drop-in's syntax, `systemctl daemon-reload` reading the edited
// files: Reload here only records the call), its job queue (merging,
// cancelling, a job's timeout), dependencies between units, and the
// restart policy (Restart=always). The wire protocol, the bus daemon and
// its authentication are real.
package systemdtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/sandboxpin/sandboxpin/internal/runtimetest"
)

// DaemonPath is the bus daemon that Start runs (Debian's dbus-daemon).
const DaemonPath = "/usr/bin/dbus-daemon"

// The names systemd's manager has on the bus (src/core/dbus-manager.c at
// systemd commit 005472fb0d0f094659725e562a9c36fa3ecc46cf, bus_manager_vtable).
const (
	Name      = "org.freedesktop.systemd1"
	Path      = dbus.ObjectPath("/org/freedesktop/systemd1")
	Interface = "org.freedesktop.systemd1.Manager"
)

// Units are the units a node has, by name ("containerd.service"): each
// function does what restarting that unit would do on the node (its
// ExecStop, then its ExecStart); ctx ends when the test does. An error
// ends the unit's job with the result "failed".
type Units map[string]func(ctx context.Context) error

// Call is one call the manager received, in order: Method is the member
// name ("RestartUnit"), Args its arguments, Result the job's result for a
// RestartUnit ("done", "failed"; empty while its job runs), or the name
// of the error the call returned.
type Call struct {
	Method string
	Args   []string
	Result string
}

// Bus is a running dbus-daemon with the manager's stand-in on it.
type Bus struct {
	// Address is the bus's address, "unix:path=SOCKET".
	Address string

	daemon *exec.Cmd
	conn   *dbus.Conn
	units  Units
	ctx    context.Context
	jobs   sync.WaitGroup

	mu    sync.Mutex
	calls []Call
	jobID uint32
}

// Available reports whether the bus daemon is installed, and if not, why.
func Available() (bool, string) {
	if _, err := os.Stat(DaemonPath); err != nil {
		return false, fmt.Sprintf("systemdtest: %v; install Debian's dbus-daemon", err)
	}
	return true, ""
}

// Require skips the test when the bus daemon is missing, or fails it when
// SANDBOXPIN_REQUIRE_RUNTIMES=1.
func Require(t testing.TB) {
	t.Helper()
	runtimetest.Require(t, "dbus-daemon", Available)
}

// busConfig listens on one socket and lets every peer own any name and
// send and receive anything: a test's bus, which nothing else uses.
// EXTERNAL is the authentication go-systemd offers (its dbusAuthConnection).
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// Start runs dbus-daemon listening on socket (its directory must exist)
// and the manager's stand-in on it, which restarts units with units' functions.
// t.Cleanup stops both (after waiting for the jobs that run). It calls
// Require first.
func Start(t testing.TB, socket string, units Units) *Bus {
	t.Helper()
	Require(t)
	config := filepath.Join(t.TempDir(), "bus.conf")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(busConfig, socket)), 0o600); err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bus{Address: "unix:path=" + socket, units: units, ctx: ctx}
	b.daemon = exec.Command(DaemonPath, "--config-file="+config, "--nofork", "--nopidfile", "--print-address")
	out, err := b.daemon.StdoutPipe()
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	var stderr runtimetest.SyncBuffer
	b.daemon.Stderr = &stderr
	if err := b.daemon.Start(); err != nil {
		t.Fatalf("systemdtest: start %s: %v", DaemonPath, err)
	}
	t.Cleanup(func() {
		cancel()
		b.jobs.Wait()
		if b.conn != nil {
			_ = b.conn.Close()
		}
		_ = b.daemon.Process.Kill()
		_ = b.daemon.Wait()
		_ = os.Remove(socket)
	})
	// The daemon prints its address once it listens.
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok || !strings.HasPrefix(l, "unix:path="+socket) {
			t.Fatalf("systemdtest: dbus-daemon printed %q, not its address: %s", l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("systemdtest: dbus-daemon did not start in 30 s: %s", stderr.String())
	}
	conn, err := Dial(b.Address)
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	b.conn = conn
	if err := conn.Export(&manager{b}, Path, Interface); err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	reply, err := conn.RequestName(Name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("systemdtest: own %s: %v (reply %d)", Name, err, reply)
	}
	return b
}

// Dial connects to the bus at address as go-systemd does: EXTERNAL
// authentication as this process's user, then Hello.
func Dial(address string) (*dbus.Conn, error) {
	conn, err := dbus.Dial(address)
	if err != nil {
		return nil, err
	}
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(fmt.Sprint(os.Getuid()))}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := conn.Hello(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// Calls returns the calls the manager received so far.
func (b *Bus) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Call(nil), b.calls...)
}

// Restarts returns the units of the RestartUnit calls so far, with their
// results: "containerd.service done".
func (b *Bus) Restarts() []string {
	var out []string
	for _, c := range b.Calls() {
		if c.Method == "RestartUnit" {
			out = append(out, c.Args[0]+" "+c.Result)
		}
	}
	return out
}

func (b *Bus) record(c Call) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, c)
	return len(b.calls) - 1
}

// manager holds the exported methods (godbus exports a value's methods
// whose last result is *dbus.Error).
type manager struct{ b *Bus }

// Reload is Manager.Reload (no arguments, no result): systemd reloads its
// units before it replies. Here it records the call.
func (m *manager) Reload() *dbus.Error {
	m.b.record(Call{Method: "Reload", Result: "done"})
	return nil
}

// Subscribe and Unsubscribe are the Manager's (no arguments, no result).
// systemd sends its signals on the system bus only while a peer is
// subscribed, but a job's JobRemoved always to the peer that queued it
// (src/core/dbus.c bus_foreach_bus, and src/core/dbus-job.c
// bus_job_send_removed_signal with the job's bus_track, at the commit
// above): so here JobRemoved goes out whether or not anyone subscribed.
func (m *manager) Subscribe() *dbus.Error {
	m.b.record(Call{Method: "Subscribe", Result: "done"})
	return nil
}

func (m *manager) Unsubscribe() *dbus.Error {
	m.b.record(Call{Method: "Unsubscribe", Result: "done"})
	return nil
}

// RestartUnit is Manager.RestartUnit(s name, s mode) -> o job. A name
// that is not a unit's fails the call with InvalidArgs ("Unit name %s is
// not valid.", systemd's manager_load_unit_prepare in src/core/manager.c
// at the commit above), a unit the node lacks with NoSuchUnit ("Unit %s
// not found."); otherwise the call returns the job's path and the job
// runs, its end the signal JobRemoved(u id, o job, s unit, s result) with
// result "done" or "failed" (the signal's arguments in bus_manager_vtable).
// systemd replies before the job runs; here the job's goroutine starts
// as the method returns, so that a unit's function that returns at once
// could have its JobRemoved reach the bus before the reply: go-systemd
// (dbus/methods.go startJob and jobComplete at v22.7.0) takes either order.
func (m *manager) RestartUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	b := m.b
	call := Call{Method: "RestartUnit", Args: []string{name, mode}}
	restart, ok := b.units[name]
	var e *dbus.Error
	switch {
	case !validUnit(name):
		e = dbus.NewError("org.freedesktop.DBus.Error.InvalidArgs", []any{fmt.Sprintf("Unit name %s is not valid.", name)})
	case !ok:
		e = dbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{fmt.Sprintf("Unit %s not found.", name)})
	}
	if e != nil {
		call.Result = e.Name
		b.record(call)
		return "", e
	}
	b.mu.Lock()
	b.jobID++
	id := b.jobID
	b.mu.Unlock()
	job := dbus.ObjectPath(fmt.Sprintf("%s/job/%d", Path, id))
	i := b.record(call)
	b.jobs.Add(1)
	go func() {
		defer b.jobs.Done()
		result := "done"
		if err := restart(b.ctx); err != nil {
			result = "failed"
		}
		b.mu.Lock()
		b.calls[i].Result = result
		b.mu.Unlock()
		_ = b.conn.Emit(Path, Interface+".JobRemoved", id, job, name, result)
	}()
	return job, nil
}

// validUnit reports whether name is a unit's name: a name and a known
// unit type's suffix (systemd's unit_name_is_valid, in short: the bus API
// takes no name without its suffix; systemctl adds ".service" itself).
func validUnit(name string) bool {
	base, suffix, ok := cutLast(name, ".")
	if !ok || base == "" || strings.ContainsAny(base, "/ ") {
		return false
	}
	switch suffix {
	case "service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope":
		return true
	}
	return false
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
