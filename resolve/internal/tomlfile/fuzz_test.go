package tomlfile

import (
	"testing"
)

// FuzzGoTOML is the differential target for containerd's files: Parse
// with GoTOML must accept exactly what go-toml's decoder accepts (short of
// a limit), name a line inside the file for every error, and index a line
// for every key written outside arrays.
func FuzzGoTOML(f *testing.F) { fuzzDecoder(f, decoders[0].dec, decoders[0].decode) }

// FuzzBurntSushi is the differential target for CRI-O's files, with
// BurntSushi/toml's decoder as the judge.
func FuzzBurntSushi(f *testing.F) { fuzzDecoder(f, decoders[1].dec, decoders[1].decode) }

func fuzzDecoder(f *testing.F, dec Decoder, decode func([]byte) error) {
	for _, d := range tomlGood {
		f.Add([]byte(d))
	}
	for _, tt := range tomlErrors {
		f.Add([]byte(tt.content))
	}
	for _, d := range tomlEdges {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkVerdict(t, dec, decode, data)
	})
}

// FuzzShapes builds deep and wide documents (see tomlShape): each is read,
// and refused with ErrLimit exactly when it passes a limit.
func FuzzShapes(f *testing.F) {
	for kind := range byte(8) {
		f.Add(kind, uint32(10), false)
		f.Add(kind, uint32(MaxDepth), true)
		f.Add(kind, uint32(MaxDepth+1), false)
	}
	f.Add(byte(4), uint32(MaxEntries+1), false)
	f.Fuzz(func(t *testing.T, kind byte, n uint32, crio bool) {
		n %= 8 * MaxEntries
		if kind%8 < 4 {
			n %= 4096 // depths: far past the limit is no different
		}
		d := decoders[0]
		if crio {
			d = decoders[1]
		}
		data := []byte(tomlShape(kind, int(n)))
		checkVerdict(t, d.dec, d.decode, data)
		if _, err := Parse(data, d.dec, MaxEntries); tomlShapeOverLimit(kind, int(n)) != (err != nil) {
			t.Fatalf("shape %d of %d: over the limit %v, Parse error %v", kind%8, n, tomlShapeOverLimit(kind, int(n)), err)
		}
	})
}
