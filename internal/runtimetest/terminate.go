package runtimetest

import (
	"os"
	"syscall"
	"time"
)

// Terminate stops a process as systemd's stop does: SIGTERM, then SIGKILL
// when it has not exited after grace. exited is closed when the process's
// Wait returned. It waits for the exit either way and reports whether
// SIGTERM was enough.
func Terminate(p *os.Process, exited <-chan struct{}, grace time.Duration) bool {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return true
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
		return false
	}
}
