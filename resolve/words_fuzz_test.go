package resolve

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustMarshal(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzWords decodes arbitrary text as each word-valued type: an error
// leaves the value as it was; a decoded value marshals back to the very
// text (CRI-O's old "crio-" respelled "cri-o-"), and a known one is one of
// this version's words.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"", "reboot", "cri-o", "a--b", "-x", "Upper", "x-", "containerd-never-pins", "crio-never-pins", "crio-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		k := KindNoRuntime
		a, c := ActionEdit, ComponentKubelet
		errK, errA, errC := json.Unmarshal(in, &k), json.Unmarshal(in, &a), json.Unmarshal(in, &c)
		if (errK == nil) != (errA == nil) || (errK == nil) != (errC == nil) {
			t.Fatalf("%q: kind error %v, action error %v, component error %v", s, errK, errA, errC)
		}
		if errK != nil {
			if k != KindNoRuntime || a != ActionEdit || c != ComponentKubelet {
				t.Fatalf("%q: the error changed the value", s)
			}
			return
		}
		want := s
		if rest, ok := strings.CutPrefix(s, "crio-"); ok && len(s) < 128 {
			want = "cri-o-" + rest
		}
		if string(k) != want || string(a) != want || string(c) != want {
			t.Fatalf("%q decoded as %q, %q, %q", s, k, a, c)
		}
		if out, _ := json.Marshal(k); string(out) != mustMarshal(t, want) {
			t.Fatalf("%q marshals as %s", s, out)
		}
		if a.Known() && a != ActionEdit && a != ActionRemove && a != ActionUpgrade && a != ActionShim &&
			a != ActionRestart && a != ActionPull && a != ActionAdd && a != ActionLabel {
			t.Fatalf("%q is Known", s)
		}
	})
}
