package resolve

import (
	"errors"
	"testing"
)

func FuzzKubeadmPauseImage(f *testing.F) {
	for _, tt := range kubeadmTests {
		f.Add(tt.version, tt.repo)
	}
	f.Fuzz(func(t *testing.T, version, repo string) {
		img, err := KubeadmPauseImage(version, repo)
		if err != nil {
			if img != "" || !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("KubeadmPauseImage(%q, %q) = %q, %v", version, repo, img, err)
			}
			return
		}
		// Adding or removing the leading v does not change the answer.
		other := "v" + version
		if len(version) > 0 && (version[0] == 'v' || version[0] == 'V') {
			other = version[1:]
		}
		if img2, err2 := KubeadmPauseImage(other, repo); img2 != img || err2 != nil {
			t.Fatalf("KubeadmPauseImage(%q) = %q, %v; KubeadmPauseImage(%q) = %q", other, img2, err2, version, img)
		}
	})
}
