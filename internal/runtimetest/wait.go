package runtimetest

import (
	"context"
	"fmt"
	"os"
	"time"
)

// pollInterval is how often WaitReady looks again: runtimes here come up in
// 0.3–3 s, so 50 ms costs little and adds little latency.
const pollInterval = 50 * time.Millisecond

// WaitReady polls until socket exists and probe returns nil. It returns
// exitErr when exited is closed first (the runtime died), and the context's
// error, wrapping the last probe or stat error, when ctx ends first.
func WaitReady(ctx context.Context, socket string, exited <-chan struct{}, exitErr error, probe func(context.Context) error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-exited:
			return exitErr
		case <-ctx.Done():
			if last == nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		case <-tick.C:
		}
		if _, err := os.Stat(socket); err != nil {
			last = err
			continue
		}
		if last = probe(ctx); last == nil {
			return nil
		}
	}
}
