package criinfo

import (
	"encoding/json"
	"errors"
	"testing"
)

// maxSeed bounds the seeds taken from the test tables: the fuzzer minimizes
// every input that finds new coverage byte by byte, which takes minutes for
// the 500 KB hostile cases.
const maxSeed = 4 << 10

// checkResult checks the properties every answer has: an error is a
// *ParseError wrapping one sentinel and comes with the zero Info; a result
// names a runtime and reports an image exactly when it has one.
func checkResult(t *testing.T, got Info, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v (%T) is not a *ParseError", err, err)
		}
		if !errors.Is(err, ErrInvalidInfo) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if pe.Offset < 0 {
			t.Fatalf("error %v has a negative offset", err)
		}
		if got != (Info{}) {
			t.Fatalf("got %+v with error %v, want the zero Info", got, err)
		}
		return
	}
	switch got.Runtime {
	case RuntimeContainerd, RuntimeCRIO, RuntimeUnknown:
	default:
		t.Fatalf("Runtime = %q", got.Runtime)
	}
	if got.SandboxImageReported != (got.SandboxImage != "") {
		t.Fatalf("SandboxImageReported = %t with SandboxImage %q", got.SandboxImageReported, got.SandboxImage)
	}
	if got.RuntimeVersion != "" {
		t.Fatalf("RuntimeVersion = %q, the Info map carries none", got.RuntimeVersion)
	}
}

// encodeConfig returns the "config" object that reports in, or nil.
func encodeConfig(t *testing.T, in Info) []byte {
	t.Helper()
	cfg := map[string]any{}
	if in.Runtime == RuntimeCRIO {
		cfg["crio"] = map[string]any{}
	}
	if in.SandboxImageReported {
		cfg["sandboxImage"] = in.SandboxImage
	}
	if in.ContainerdEndpoint != "" {
		cfg["containerdEndpoint"] = in.ContainerdEndpoint
	}
	if len(cfg) == 0 {
		return nil
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encodeMap builds an Info map that reports in.
func encodeMap(t *testing.T, in Info) map[string]string {
	t.Helper()
	m := map[string]string{}
	if cfg := encodeConfig(t, in); cfg != nil {
		m["config"] = string(cfg)
	}
	switch in.Runtime {
	case RuntimeContainerd:
		if in.ContainerdEndpoint == "" {
			m["lastCNILoadStatus"] = "OK"
		}
	}
	return m
}

// encodeJSON builds a crictl document that reports in.
func encodeJSON(t *testing.T, in Info) []byte {
	t.Helper()
	doc := map[string]json.RawMessage{"status": json.RawMessage(`{"conditions":[]}`)}
	for k, v := range encodeMap(t, in) {
		if k == "config" {
			doc[k] = json.RawMessage(v)
			continue
		}
		s, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		doc[k] = s
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		size := 0
		for k, v := range tt.in {
			size += len(k) + len(v)
		}
		if len(tt.in) > 2 || size > maxSeed {
			continue
		}
		args := []string{"config", "", "lastCNILoadStatus", ""}
		i := 0
		for k, v := range tt.in {
			args[i], args[i+1] = k, v
			i += 2
		}
		f.Add(args[0], args[1], args[2], args[3])
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		in := map[string]string{k1: v1, k2: v2}
		got, err := Parse(in)
		checkResult(t, got, err)
		if err != nil {
			return
		}
		again, err := Parse(encodeMap(t, got))
		if err != nil {
			t.Fatalf("Parse(encodeMap(%+v)) error = %v", got, err)
		}
		if again != got {
			t.Fatalf("Parse(encodeMap(%+v)) = %+v, want the same", got, again)
		}
		// The crictl form agrees with the map; it may be too deep or too
		// large by its extra level and quoting, never different.
		viaJSON, err := ParseJSON(encodeJSON(t, got))
		if err != nil || viaJSON != got {
			t.Fatalf("ParseJSON(encodeJSON(%+v)) = %+v, %v", got, viaJSON, err)
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, tt := range parseJSONTests {
		if len(tt.in) <= maxSeed {
			f.Add([]byte(tt.in))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseJSON(b)
		checkResult(t, got, err)
		if err != nil {
			return
		}
		again, err := ParseJSON(encodeJSON(t, got))
		if err != nil {
			t.Fatalf("ParseJSON(encodeJSON(%+v)) error = %v", got, err)
		}
		if again != got {
			t.Fatalf("ParseJSON(encodeJSON(%+v)) = %+v, want the same", got, again)
		}
		viaMap, err := Parse(encodeMap(t, got))
		if err != nil || viaMap != got {
			t.Fatalf("Parse(encodeMap(%+v)) = %+v, %v", got, viaMap, err)
		}
	})
}
