package resolve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// TestCRIOPinNotes covers what resolve says about CRI-O pinning its pause
// image, per version: the rule is the one TestLiveCRIOCompat (criinfo/cri)
// measures on CRI-O 1.36.3.
func TestCRIOPinNotes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		img       string   // pause_image
		version   string   // CRI-O version, "" unknown
		wantNotes []string // substrings some note must contain; none about pinning when empty
		wantConf  string   // substring of a conflict
	}{
		{name: "1.36 full name", img: "registry.k8s.io/pause:3.10.1", version: "1.36.3"},
		{name: "1.36 uppercase host pins", img: "REGISTRY.K8S.IO/pause:3.10.1", version: "1.36.3"},
		{name: "1.36 alias", img: "k8s.gcr.io/pause:3.10.1", version: "1.36.3",
			wantNotes: []string{"pins the pause image only under the name k8s.gcr.io/pause:3.10.1", "stored as registry.k8s.io/pause:3.10.1"}},
		{name: "1.36 tagless", img: "registry.k8s.io/pause", version: "1.36.3",
			wantNotes: []string{"exact, case-insensitive compare", "here registry.k8s.io/pause:latest"}},
		{name: "1.36 short", img: "pause:3.10.1", version: "1.36.3",
			wantNotes: []string{"not a full name", "docker.io/library/pause:3.10.1"}},
		{name: "unknown version short", img: "pause:3.10.1",
			wantNotes: []string{"CRI-O (1.28 and later) pins the pause image"}},
		{name: "1.27 never pins", img: "registry.k8s.io/pause:3.9", version: "1.27.4",
			wantNotes: []string{"CRI-O 1.27.4 never reports Image.pinned"}},
		{name: "1.28 first name only", img: "registry.k8s.io/pause:3.9", version: "1.28.11",
			wantNotes: []string{"only the first name"}},
		{name: "1.29 every name", img: "registry.k8s.io/pause:3.9", version: "1.29.0"},
		{name: "uppercase path refuses to start", img: "registry.k8s.io/PAUSE:3.10.1", version: "1.36.3",
			wantConf: "CRI-O refuses to start with it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Resolve(context.Background(), Options{
				Root:           nodetest.MapFS(map[string]string{crioMain: "[crio.image]\npause_image = \"" + tt.img + "\"\n"}),
				RuntimeVersion: tt.version,
			})
			require.NoError(t, err)
			assert.Equal(t, criinfo.RuntimeCRIO, res.Runtime)
			assert.Equal(t, pin.ModeCRIOCompat, res.PinMode)
			assert.Equal(t, []string{tt.img}, res.Pins, "CRI-O pins pause_image as written")
			for _, want := range tt.wantNotes {
				assert.True(t, containsSub(res.Notes, want), "no note contains %q in %q", want, res.Notes)
			}
			if len(tt.wantNotes) == 0 {
				assert.False(t, containsSub(res.Notes, "pins the pause image") || containsSub(res.Notes, "Image.pinned") ||
					containsSub(res.Notes, "first name"), "unexpected pin note in %q", res.Notes)
			}
			var msgs []string
			for _, c := range res.Conflicts {
				msgs = append(msgs, c.Message)
			}
			if tt.wantConf != "" {
				assert.True(t, containsSub(msgs, tt.wantConf), "no conflict contains %q in %q", tt.wantConf, msgs)
			}
		})
	}
}

// TestCRIOInfoVersionNote: CRI-O reports config.sandboxImage since 1.27.0;
// an older live CRI-O answers without it, and resolve says why.
func TestCRIOInfoVersionNote(t *testing.T) {
	t.Parallel()
	root := nodetest.MapFS(map[string]string{crioMain: "[crio.image]\npause_image = \"registry.k8s.io/pause:3.6\"\n"})
	for _, tt := range []struct {
		live     criinfo.Info
		wantNote bool
	}{
		{live: criinfo.Info{Runtime: criinfo.RuntimeCRIO, RuntimeVersion: "1.26.4"}, wantNote: true},
		{live: criinfo.Info{Runtime: criinfo.RuntimeCRIO, RuntimeVersion: "1.27.0", SandboxImage: "registry.k8s.io/pause:3.6", SandboxImageReported: true}},
	} {
		res, err := Resolve(context.Background(), Options{Root: root, Live: fakeLive{info: tt.live}})
		require.NoError(t, err)
		assert.Equal(t, "registry.k8s.io/pause:3.6", res.SandboxImage)
		assert.Equal(t, tt.wantNote, containsSub(res.Notes, "config.sandboxImage arrived in 1.27.0"), "CRI-O %s: notes %q", tt.live.RuntimeVersion, res.Notes)
	}
}
