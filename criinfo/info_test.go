package criinfo

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse(%.80q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.wantKey, pe.Key, "ParseError.Key")
				assert.Equal(t, tt.wantOffset, pe.Offset, "ParseError.Offset (%v)", err)
				assert.Zero(t, got, "Parse returned a value with an error")
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range parseJSONTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseJSON([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseJSON(%.80q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.wantKey, pe.Key, "ParseError.Key")
				assert.Equal(t, tt.wantOffset, pe.Offset, "ParseError.Offset (%v)", err)
				assert.Zero(t, got, "ParseJSON returned a value with an error")
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestParseMatchesParseJSON checks that the Info map, encoded as crictl
// would embed it, gives the same answer through both parsers.
func TestParseMatchesParseJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range parseTests {
		if tt.wantErr != nil || tt.parseOnly || len(tt.in) == 0 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := crictlDocument(t, tt.in)
			got, err := ParseJSON(doc)
			require.NoError(t, err, "ParseJSON(%.200s)", doc)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse(map[string]string{"config": `{"sandboxImage":3}`})
	require.Error(t, err)
	assert.Equal(t, `criinfo: key "config": offset 16: invalid runtime info: config.sandboxImage is a number, want a string`, err.Error())
	_, err = ParseJSON([]byte(`[]`))
	require.Error(t, err)
	assert.Equal(t, `criinfo: offset 0: invalid runtime info: top-level value is not a JSON object`, err.Error())
}
