package runtimetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitReady(t *testing.T) {
	t.Parallel()
	errExited := errors.New("exited")
	errProbe := errors.New("not ready")
	tests := []struct {
		name    string
		socket  bool  // create the socket path
		exit    bool  // close exited before waiting
		probeOK int   // probe succeeds from this call on (0: never)
		wantErr error // errors.Is target, nil for success
	}{
		{name: "ready after two probes", socket: true, probeOK: 3},
		{name: "socket never appears", wantErr: context.DeadlineExceeded},
		{name: "probe never succeeds", socket: true, wantErr: errProbe},
		{name: "runtime exits", exit: true, wantErr: errExited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sock := filepath.Join(t.TempDir(), "s.sock")
			if tt.socket {
				require.NoError(t, os.WriteFile(sock, nil, 0o600))
			}
			exited := make(chan struct{})
			if tt.exit {
				close(exited)
			}
			calls := 0
			probe := func(context.Context) error {
				calls++
				if tt.probeOK > 0 && calls >= tt.probeOK {
					return nil
				}
				return errProbe
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			err := WaitReady(ctx, sock, exited, errExited, probe)
			if tt.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.probeOK, calls)
				return
			}
			assert.ErrorIs(t, err, tt.wantErr)
		})
	}
}
