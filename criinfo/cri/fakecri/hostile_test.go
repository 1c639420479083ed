package fakecri

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImagesOfSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int // bytes of the ListImagesResponse
	}{
		{name: "tiny", size: 2},
		{name: "one image and a pad", size: 300},
		{name: "grpc default limit", size: 4 << 20},
		{name: "over 16 MiB", size: 20 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			imgs := ImagesOfSize(tt.size)
			assert.Equal(t, tt.size, ListSize(imgs))
		})
	}
}

func TestDeep(t *testing.T) {
	t.Parallel()
	for _, s := range []string{DeepObject(3), DeepArray(3)} {
		assert.True(t, json.Valid([]byte(s)), s)
	}
	assert.JSONEq(t, `{"a":{"a":{}}}`, DeepObject(3))
	assert.Len(t, DeepObject(100_000), 6*100_000-4)
	assert.Equal(t, "[[]]", DeepArray(2))
}

func TestFillerInfo(t *testing.T) {
	t.Parallel()
	info := FillerInfo(1<<20, 1000)
	total := 0
	for k, v := range info {
		total += len(k) + len(v)
	}
	require.LessOrEqual(t, total, 1<<20)
	assert.Greater(t, total, 1<<20-1014)
}

func TestMeasureAlloc(t *testing.T) {
	var keep []byte
	a := MeasureAlloc(func() { keep = make([]byte, 8<<20) })
	assert.GreaterOrEqual(t, a.Total, uint64(8<<20))
	assert.Len(t, keep, 8<<20)
}
