package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestExitAfterSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// returnedFirst: the command returned before ctx ended (main's
		// stop), rather than a signal ending ctx while it runs.
		returnedFirst bool
		want          []int
	}{
		{name: "a signal while the command runs", want: []int{exitError}},
		{name: "the command returned, then main's stop", returnedFirst: true, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan struct{})
			codes := make(chan int, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				exitAfterSignal(ctx, returned, time.Millisecond, func(code int) { codes <- code })
			}()
			if tt.returnedFirst {
				close(returned)
			}
			cancel()
			<-done
			close(codes)
			var got []int
			for c := range codes {
				got = append(got, c)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
