package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/pin"
)

// TestShimMemo checks that a large image list (several buffers, which the
// shim remembers) is pinned right when it repeats, when the matcher
// changes under the same list, and when the list changes at every call.
func TestShimMemo(t *testing.T) {
	t.Parallel()
	const n = 1000
	app := "registry.example.com/team7/app7:v1.7"
	other, err := pin.Compile([]string{app})
	require.NoError(t, err)
	matchers := []*pin.Matcher{testMatcher(t), other}
	i := 0
	load := func(context.Context) (*pin.Matcher, error) { return matchers[i], nil }
	ctx := testContext(t)
	for _, changing := range []bool{false, true} {
		fake := &fakeRuntime{images: benchImages(n), changing: changing}
		i = 0
		s, shimPath := startShim(t, startFake(t, fake), load)
		images := runtimeapi.NewImageServiceClient(dial(t, shimPath))
		for i = range matchers { // sequential: each step depends on the one before
			if i > 0 {
				require.NoError(t, s.reload(ctx))
			}
			for call := range 4 {
				resp, err := images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				require.NoError(t, err)
				require.Len(t, resp.GetImages(), n)
				pinned := pinnedByTag(resp.GetImages())
				assert.Equal(t, i == 0, pinned[tagPause], "changing %v, matcher %d, call %d: pause", changing, i, call)
				assert.Equal(t, i == 1, pinned[app], "changing %v, matcher %d, call %d: %s", changing, i, call, app)
				count := 0
				for _, p := range pinned {
					if p {
						count++
					}
				}
				assert.Equal(t, 1, count, "changing %v, matcher %d, call %d: images pinned", changing, i, call)
			}
			s.memo.mu.RLock()
			assert.Same(t, matchers[i], s.memo.m, "the memo holds the list walked with the current matcher")
			s.memo.mu.RUnlock()
			if !changing {
				assert.Zero(t, s.memo.misses.Load(), "the repeated list hit the memo")
			} else {
				assert.Equal(t, uint64(4*(i+1)), s.memo.misses.Load(), "the changing list missed at every call")
			}
		}
	}
}

// TestListMemoMissed checks when a list that keeps changing is stored:
// after 1, 2, 4, 8, 16, 32, then every 64 misses in a row, and again at
// the first miss after a hit.
func TestListMemoMissed(t *testing.T) {
	t.Parallel()
	var lm listMemo
	var stored []int
	for k := 1; k <= 200; k++ {
		if lm.missed() {
			stored = append(stored, k)
		}
	}
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 128, 192}, stored)
	lm.misses.Store(0) // a hit
	assert.True(t, lm.missed())
}
