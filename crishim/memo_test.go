package crishim

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestVerdictMemo walks list responses with a memo, twice, and checks
// that it finds what walking without one finds; and that a change of
// rules or of an image's bytes (pinned by the runtime since) is not
// answered from the memo.
func TestVerdictMemo(t *testing.T) {
	t.Parallel()
	memo := newVerdictMemo()
	for _, m := range patchMatchers(t) {
		if m == nil {
			continue
		}
		for _, sr := range seedResponses(t) {
			if sr.kind == kindStatus {
				continue
			}
			plain := new(patcher)
			_, err := plain.walk(sr.b, 0, false, m, nil, false)
			if err != nil {
				continue
			}
			memo.use(m)
			for round := range 2 {
				p := &patcher{memo: memo}
				_, err := p.walk(sr.b, 0, false, m, nil, false)
				require.NoError(t, err)
				require.Equal(t, plain.spans, p.spans, "%s, round %d", sr.name, round)
			}
		}
	}

	m := testMatcher(t)
	imgs := benchImages(3)
	b, err := proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
	require.NoError(t, err)
	memo.use(m)
	p := &patcher{memo: memo}
	_, err = p.walk(b, 0, false, m, nil, false)
	require.NoError(t, err)
	require.Len(t, p.spans, 1, "the pause image")

	imgs[0].Pinned = true // the runtime pins it now: nothing to do
	b, err = proto.Marshal(&runtimeapi.ListImagesResponse{Images: imgs})
	require.NoError(t, err)
	p.spans = p.spans[:0]
	_, err = p.walk(b, 0, false, m, nil, false)
	require.NoError(t, err)
	require.Empty(t, p.spans)

	none := patchMatchers(t)[3] // pins image 2 by ID only
	memo.use(none)
	p.spans = p.spans[:0]
	_, err = p.walk(b, 0, false, none, nil, false)
	require.NoError(t, err)
	require.Len(t, p.spans, 1, "new rules are not answered from the memo")
	require.Len(t, memo.entries, len(imgs), "one entry per image, the old rules' gone")
}
