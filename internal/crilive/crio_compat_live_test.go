package crilive

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/internal/containerdtest"
	"github.com/sandboxpin/sandboxpin/internal/criotest"
	"github.com/sandboxpin/sandboxpin/pin"
)

// crioStored are the images the differential test stores in CRI-O, several
// under more than one name. Short names are stored fully qualified.
var crioStored = []containerdtest.Image{
	{Names: []string{"registry.k8s.io/pause:3.10.1"}},
	{Names: []string{"quay.io/coreos/etcd:v3.5.0", "docker.io/library/etcd:3.5"}},
	{Names: []string{"evil.com/quay.io/x:1"}},
	{Names: []string{"docker.io/library/busybox:1.36", "docker.io/library/busybox:latest"}},
	{Names: []string{"QUAY.IO/ns/upper:1"}},
	{Names: []string{"ghcr.io/org/keyword-app:v1", "ghcr.io/org/other:v2"}},
	{Names: []string{"registry.k8s.io/coredns/coredns:v1.11.1"}},
}

// crioPinSets are the pinned_images lists and pause images the differential
// test configures CRI-O with, one after the other.
var crioPinSets = []struct {
	name   string
	pause  string
	pinned []string
}{
	{name: "none", pause: "registry.k8s.io/pause:3.10.1", pinned: nil},
	{name: "empty-entry", pause: "registry.k8s.io/pause:3.10.1", pinned: []string{""}},
	{name: "exact", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"quay.io/coreos/etcd:v3.5.0", "docker.io/library/busybox:latest"}},
	{name: "short-and-tagless", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"busybox:1.36", "etcd", "registry.k8s.io/coredns/coredns", "docker.io/library/etcd"}},
	{name: "mixed-case-exact", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"DOCKER.IO/library/BUSYBOX:1.36", "Registry.K8s.io/Coredns/coredns:v1.11.1", "quay.io/ns/upper:1"}},
	{name: "prefix-unanchored", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"quay.io/*"}},
	{name: "prefix-mid-name", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"pause*", "org/*", "library/busy*"}},
	{name: "keyword", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"*coredns*", "*ETCD*"}},
	{name: "keyword-unicode-fold", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"*\u212Aeyword*", "*\u017Fv*"}}, // KELVIN SIGN folds to k, LONG S to s
	{name: "literal-star", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"quay.io/*/etcd:v3.5.0", "ghcr.io/*/other*", "x*y"}},
	{name: "digest-and-id-text", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"*sha256*", "*@*", "sha256:*"}},
	{name: "digest-only-image", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"example.com/bydigest/*", "*BYDIGEST/app@*"}},
	{name: "everything", pause: "registry.k8s.io/pause:3.10.1",
		pinned: []string{"**"}},
	{name: "pause-alias", pause: "k8s.gcr.io/pause:3.10.1", pinned: []string{"*busybox*"}},
	{name: "pause-tagless", pause: "registry.k8s.io/pause", pinned: nil},
	{name: "pause-short", pause: "pause:3.10.1", pinned: nil},
	{name: "pause-prefix-of-stored", pause: "registry.k8s.io/pause:3.10", pinned: nil}, // anchored at the end
	{name: "pause-suffix-of-stored", pause: "k8s.io/pause:3.10.1", pinned: nil},        // anchored at the start
	{name: "pause-uppercase-host", pause: "REGISTRY.K8S.IO/pause:3.10.1", pinned: nil},
	{name: "pause-other", pause: "registry.k8s.io/pause:3.9", pinned: []string{"ghcr.io/org/other:v2"}},
}

// pauseRule is CRI-O's rule for pause_image, written out independently of
// pin: a case-insensitive, whole-string compare against each stored name.
func pauseRule(pause string, img *runtimeapi.Image) bool {
	for _, tag := range img.GetRepoTags() {
		if strings.EqualFold(tag, pause) {
			return true
		}
	}
	return false
}

// TestLiveCRIOCompat is the differential test of pin.ModeCRIOCompat against
// CRI-O itself: for every set of crioPinSets, CRI-O's own Image.pinned must
// equal pin.Compile(pinned_images, CRIOCompat) or the pause-image rule, for
// every stored image. Sets are applied with SIGHUP; the first and last also
// with a restart, since CRI-O builds its list on two code paths.
func TestLiveCRIOCompat(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := criotest.Start(t, criotest.Options{PauseImage: crioPinSets[0].pause, Images: crioStored})
	t.Logf("CRI-O %s with %d images started in %v", criotest.Version, len(crioStored), time.Since(begin))
	// One more image, stored by digest only, loaded while CRI-O runs.
	byDigest := c.LoadByDigest(t, "example.com/bydigest/app", containerdtest.Image{Names: []string{"example.com/bydigest/app:content"}})
	columns := make([]string, 0, len(crioStored)+1)
	for _, img := range crioStored {
		columns = append(columns, img.Names[0])
	}
	columns = append(columns, byDigest)

	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %-8s", "set", "how")
	for _, col := range columns {
		fmt.Fprintf(&table, " %s", shortName(col))
	}
	table.WriteString("\n")
	check := func(set int, how string) {
		s := crioPinSets[set]
		m, err := pin.Compile(s.pinned, pin.WithMode(pin.ModeCRIOCompat))
		require.NoError(t, err, "set %s", s.name)
		imgs := c.Images(t)
		require.Len(t, imgs, len(columns))
		fmt.Fprintf(&table, "%-22s %-8s", s.name, how)
		for col, name := range columns {
			i := slices.IndexFunc(imgs, func(img *runtimeapi.Image) bool {
				return slices.Contains(img.GetRepoTags(), name) || slices.Contains(img.GetRepoDigests(), name)
			})
			require.GreaterOrEqual(t, i, 0, "%s not listed", name)
			img := imgs[i]
			want := []string(nil)
			if col < len(crioStored) {
				want = slices.Clone(crioStored[col].Names)
				slices.Sort(want)
			}
			slices.Sort(img.RepoTags)
			require.Equal(t, want, img.GetRepoTags(), "CRI-O stores the names as loaded")
			require.NotEmpty(t, img.GetRepoDigests(), "CRI-O lists repo digests for %s", name)
			predicted := m.IsPinnedImage(img) || pauseRule(s.pause, img)
			mark := map[bool]string{true: "P", false: "-"}[img.GetPinned()]
			if predicted != img.GetPinned() {
				mark += "!"
			}
			fmt.Fprintf(&table, " %*s", len(shortName(name)), mark)
			assert.Equal(t, img.GetPinned(), predicted,
				"set %s (%s): pinned_images %q, pause_image %q, image %q: CRI-O pinned=%v, CRIOCompat+pause rule=%v",
				s.name, how, s.pinned, s.pause, img.GetRepoTags(), img.GetPinned(), predicted)
		}
		table.WriteString("\n")
	}
	check(0, "start")
	for i := 1; i < len(crioPinSets); i++ {
		c.Configure(t, crioPinSets[i].pause, crioPinSets[i].pinned)
		c.Reload(t)
		check(i, "sighup")
	}
	last := len(crioPinSets) - 1
	c.Restart(t)
	check(last, "restart")
	c.Configure(t, crioPinSets[0].pause, crioPinSets[0].pinned)
	c.Restart(t)
	check(0, "restart")
	t.Logf("CRI-O's own pinned (P pinned, - not, ! CRIOCompat disagrees), %v in all:\n%s", time.Since(begin), table.String())
}

// shortName is the last path element of a name, for the table's header,
// with a digest cut short.
func shortName(name string) string {
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.Index(name, "@sha256:"); i >= 0 {
		name = name[:i+len("@sha256:")+6]
	}
	return name
}
