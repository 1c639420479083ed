package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
)

// nodeTests run Resolve over the trees in testdata/nodes; README.md there
// says what each shows.
var nodeTests = []struct {
	node          string          // directory under testdata/nodes
	opts          Options         // Root is set by the test
	wantImage     string          // Result.SandboxImage
	wantRuntime   criinfo.Runtime // Result.Runtime
	wantWinner    Source          // source of the winning candidate
	wantConflicts []string        // a substring of each Conflict.Message, in order
	wantNotes     []string        // substrings that some Note must contain
	wantPins      []string        // Result.Pins
	wantMode      pin.Mode        // Result.PinMode; "" for pin.ModeStrict
	wantPrepull   []string        // Result.Prepull
	wantKinds     []Kind          // kinds that some Note or Conflict must have
	wantLabels    []string        // Result.PinLabels
}{
	{
		node:        "containerd-1.6-v2",
		opts:        Options{RuntimeVersion: "1.6.20", KubeadmVersion: "v1.26.15"},
		wantImage:   "registry.k8s.io/pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{
			"the kubelet protects registry.k8s.io/pause:3.9",
			"kubeadm v1.26.15 pre-pulls and expects registry.k8s.io/pause:3.9",
		},
		wantNotes:   []string{"removed in kubelet 1.35"},
		wantPins:    []string{"registry.k8s.io/pause:3.6"},
		wantPrepull: []string{"registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.9"},
	},
	{
		// No version given: the package database says 1.6.20.
		node:        "containerd-1.6-debian-dpkg",
		wantImage:   "registry.k8s.io/pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceRuntimeDefault,
		wantNotes:   []string{"containerd 1.6.20 never reports Image.pinned"},
		wantPins:    []string{"registry.k8s.io/pause:3.6"},
		wantPrepull: []string{"registry.k8s.io/pause:3.6"},
	},
	{
		node:        "containerd-1.7-alias",
		opts:        Options{RuntimeVersion: "v1.7.20", KubeadmVersion: "v1.28.4"},
		wantImage:   "k8s.gcr.io/pause:3.9",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes: []string{
			"same image through a registry alias",
			"pre-pull: k8s.gcr.io/pause:3.9 and registry.k8s.io/pause:3.9 are one image under two names (a registry alias)",
			"ctr -n k8s.io images tag k8s.gcr.io/pause:3.9 registry.k8s.io/pause:3.9",
		},
		wantPins: []string{"k8s.gcr.io/pause:3.9"},
		// containerd looks up k8s.gcr.io/pause:3.9, kubeadm registry.k8s.io/pause:3.9.
		wantPrepull: []string{"k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.9"},
	},
	{
		node:        "containerd-2.2-v3-imports",
		opts:        Options{RuntimeVersion: "2.2.9", KubeadmVersion: "v1.34.1", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		wantImage:   "mirror.example.com/k8s/pause:3.10.1",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantPins: []string{"mirror.example.com/k8s/pause:3.10.1", "mirror.example.com/tools/node-agent:1.4"},
		// kubeadm's image is the sandbox image; the pinned node agent is required too.
		wantPrepull: []string{"mirror.example.com/k8s/pause:3.10.1", "mirror.example.com/tools/node-agent:1.4"},
	},
	{
		node:        "containerd-2.2-v3-ignored-v2-key",
		opts:        Options{RuntimeVersion: "v2.2.9"},
		wantImage:   "registry.k8s.io/pause:3.10.1",
		wantRuntime: "containerd", wantWinner: SourceRuntimeDefault,
		wantConflicts: []string{"containerd 2.0–2.2 ignore sandbox_image"},
		wantPins:      []string{"registry.k8s.io/pause:3.10.1"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.10.1"},
	},
	{
		node:        "containerd-2.3-v4-default",
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes:   []string{"version 4 config: only containerd 2.3 and later read it"},
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.3-v4-default",
		opts:        Options{RuntimeVersion: "2.4.2"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.3-v3-migrated",
		opts:        Options{RuntimeVersion: "v2.3.7"},
		wantImage:   "mirror.example.com/k8s/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"containerd 2.3 and later migrate this version 3 sandbox_image to pinned_images.sandbox, " +
			"where it overrides registry.k8s.io/pause:3.10.2 (/etc/containerd/config.toml:12)"},
		wantNotes:   []string{"containerd v2.3.7 migrates sandbox_image at /etc/containerd/config.toml:9", "writes the version 4 form"},
		wantPins:    []string{"mirror.example.com/k8s/pause:3.10.2"},
		wantPrepull: []string{"mirror.example.com/k8s/pause:3.10.2"},
	},
	{
		node:        "containerd-2.3-v3-migrated",
		opts:        Options{RuntimeVersion: "2.2.9"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"containerd 2.0–2.2 ignore sandbox_image under [plugins.\"io.containerd.grpc.v1.cri\"] in a version 3 config, but 2.3 and later migrate it"},
		wantPins:      []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.3-v3-migrated",
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"but 2.3 and later migrate it to pinned_images.sandbox, where it overrides"},
		wantNotes:     []string{"version 3 config: only containerd 2.x reads it"},
		wantPins:      []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.4-v4-ignored-v2-key",
		opts:        Options{RuntimeVersion: "2.4.2"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceRuntimeDefault,
		wantConflicts: []string{"containerd 2.3 and later ignore sandbox_image under [plugins.\"io.containerd.grpc.v1.cri\"] in a version 4 config"},
		wantPins:      []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.4-v4-ignored-v2-key",
		opts:        Options{RuntimeVersion: "2.2.9"},
		wantImage:   "registry.k8s.io/pause:3.10.1",
		wantRuntime: "containerd", wantWinner: SourceRuntimeDefault,
		wantConflicts: []string{
			"in a version 4 config",
			"is a version 4 config, which containerd 2.2.9 accepts only from 2.3 on: containerd fails to start",
		},
		wantPins:    []string{"registry.k8s.io/pause:3.10.1"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.1"},
	},
	{
		node:        "containerd-2.0-v2-migrated",
		opts:        Options{RuntimeVersion: "2.0.5"},
		wantImage:   "registry.k8s.io/pause:3.10",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes:   []string{"migrates sandbox_image"},
		wantPins:    []string{"registry.k8s.io/pause:3.10"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10"},
	},
	{
		node:        "k3s",
		wantImage:   "rancher/mirrored-pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantPins:    []string{"rancher/mirrored-pause:3.6"},
		wantPrepull: []string{"rancher/mirrored-pause:3.6"},
	},
	{
		node:        "crio-dropins",
		opts:        Options{RuntimeVersion: "1.31.3", KubeadmVersion: "v1.31.3"},
		wantImage:   "registry.k8s.io/pause:3.10",
		wantRuntime: "cri-o", wantWinner: SourceCRIOConfig,
		wantConflicts: []string{`pinned_images entry "*" makes CRI-O panic`},
		wantPins:      []string{"registry.k8s.io/pause:3.10", "quay.io/myorg/agent*"},
		wantMode:      pin.ModeCRIOCompat,
		wantPrepull:   []string{"registry.k8s.io/pause:3.10"},
	},
	{
		node:        "cri-dockerd",
		opts:        Options{KubeletVersion: "v1.35.0"},
		wantImage:   "registry.k8s.io/pause:3.10",
		wantRuntime: "cri-dockerd", wantWinner: SourceCRIDockerdFlags,
		wantConflicts: []string{"kubelet v1.35.0 no longer has --pod-infra-container-image and will not start"},
		wantNotes:     []string{"turns containerd's CRI plugin off"},
		wantPins:      []string{"registry.k8s.io/pause:3.10"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.10"},
	},
	{
		// kubeadm 1.35's upgrade removed the flag from kubeadm-flags.env
		// (kubernetes#133778); it is left in a drop-in and in kubeadm's
		// kubeletExtraArgs.
		node:        "kubelet-flag-dropin",
		opts:        Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{
			"kubelet 1.35.0 no longer has --pod-infra-container-image and will not start: remove it from KUBELET_EXTRA_ARGS at /etc/systemd/system/kubelet.service.d/20-sandbox.conf:2",
			"kubelet 1.35.0 no longer has --pod-infra-container-image and will not start: remove it from nodeRegistration.kubeletExtraArgs at /etc/kubernetes/kubeadm.yaml:13",
		},
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "kubelet-flag-dropin",
		opts:        Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.33.0", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes: []string{
			"kubelet 1.33.0 ignores --pod-infra-container-image (/etc/systemd/system/kubelet.service.d/20-sandbox.conf:2)",
			"kubeadm writes --pod-infra-container-image=registry.k8s.io/pause:3.10.2 (/etc/kubernetes/kubeadm.yaml:13) into kubeadm-flags.env",
		},
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		node:        "containerd-2.3.3-short",
		opts:        Options{RuntimeVersion: "2.3.3"},
		wantImage:   "rancher/mirrored-pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"containerd 2.3.3 starts no pod: its sandbox image rancher/mirrored-pause:3.6 (/etc/containerd/config.toml:6) is not written in full, " +
			"and containerd 2.3.0 to 2.3.3 look the image up by that string while they store it as docker.io/rancher/mirrored-pause:3.6"},
		wantNotes:   []string{"is a short name stored as docker.io/rancher/mirrored-pause:3.6: it will not be pinned"},
		wantPins:    []string{"rancher/mirrored-pause:3.6"},
		wantPrepull: []string{"rancher/mirrored-pause:3.6"},
	},
	{
		// What k3s v1.34.10 generates (its containerd v2.2.5-k3s2 reads
		// version 3): the default pause image moved to 3.10.2 (k3s#14339),
		// still a short name, which containerd 2.x never pins.
		node:        "k3s-1.34.10",
		opts:        Options{RuntimeVersion: "v2.2.5-k3s2"},
		wantImage:   "rancher/mirrored-pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes:   []string{"containerd v2.2.5-k3s2 pins the sandbox image by exact string, but rancher/mirrored-pause:3.10.2 (/var/lib/rancher/k3s/agent/etc/containerd/config.toml:36) is a short name"},
		wantKinds:   []Kind{KindContainerdShortNeverPinned},
		wantPins:    []string{"rancher/mirrored-pause:3.10.2"},
		wantPrepull: []string{"rancher/mirrored-pause:3.10.2"},
	},
	{
		// What RKE2 v1.34.10+rke2r1 generates: its pause image named with
		// the registry go-containerregistry gives it.
		node:        "rke2-1.34.10",
		opts:        Options{RuntimeVersion: "v2.2.6-k3s1"}, // Dockerfile: rancher/hardened-containerd:v2.2.6-k3s1-build20260728
		wantImage:   "index.docker.io/rancher/mirrored-pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantPins:    []string{"index.docker.io/rancher/mirrored-pause:3.10.2"},
		wantPrepull: []string{"index.docker.io/rancher/mirrored-pause:3.10.2"},
	},
	{
		// A release candidate of kubelet 1.35 has no flag either: it was
		// removed before 1.35's release candidates (issue 51).
		node:        "kubelet-flag-dropin",
		opts:        Options{RuntimeVersion: "2.4.2", KubeletVersion: "1.35.0-rc.1", KubeadmConfigPath: "/etc/kubernetes/kubeadm.yaml"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{
			"kubelet 1.35.0-rc.1 no longer has --pod-infra-container-image and will not start: remove it from KUBELET_EXTRA_ARGS at /etc/systemd/system/kubelet.service.d/20-sandbox.conf:2",
			"kubelet 1.35.0-rc.1 no longer has --pod-infra-container-image and will not start: remove it from nodeRegistration.kubeletExtraArgs at /etc/kubernetes/kubeadm.yaml:13",
		},
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		// k3s/RKE2's build of containerd 2.3.4 (RKE2 v1.36.4 ships
		// v2.3.4-k3s1.36) is 2.3.4, not a pre-release of it: it finds the
		// short name (issue 51).
		node:        "containerd-2.3.3-short",
		opts:        Options{RuntimeVersion: "v2.3.4-k3s1"},
		wantImage:   "rancher/mirrored-pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes:   []string{"is a short name stored as docker.io/rancher/mirrored-pause:3.6: it will not be pinned"},
		wantPins:    []string{"rancher/mirrored-pause:3.6"},
		wantPrepull: []string{"rancher/mirrored-pause:3.6"},
	},
	{
		// k3s's build of containerd 2.3.3 (RKE2 v1.36.3 runs v2.3.3-k3s1)
		// carries upstream's 2.3.4 fix, read in v2.3.2-k3s2: it finds the
		// short name (releases.BuildFixes).
		node:        "containerd-2.3.3-short",
		opts:        Options{RuntimeVersion: "v2.3.3-k3s1"},
		wantImage:   "rancher/mirrored-pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes:   []string{"is a short name stored as docker.io/rancher/mirrored-pause:3.6: it will not be pinned"},
		wantPins:    []string{"rancher/mirrored-pause:3.6"},
		wantPrepull: []string{"rancher/mirrored-pause:3.6"},
	},
	{
		node:        "containerd-2.3.3-short",
		opts:        Options{RuntimeVersion: "2.4.2"},
		wantImage:   "rancher/mirrored-pause:3.6",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes: []string{
			`containerd 2.4.2 does not pull the sandbox image for the pods of runtime handler "kata" (disable_pause_image_pull = true at /etc/containerd/config.toml:14)`,
			"is a short name stored as docker.io/rancher/mirrored-pause:3.6: it will not be pinned",
		},
		wantPins:    []string{"rancher/mirrored-pause:3.6"},
		wantPrepull: []string{"rancher/mirrored-pause:3.6"},
	},
	{
		node:        "kubeadm-mirror",
		opts:        Options{RuntimeVersion: "1.7.22", KubeadmVersion: "v1.30.3", KubeadmConfigPath: "etc/kubernetes/kubeadm.yaml"},
		wantImage:   "registry.k8s.io/pause:3.9",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"change imageRepository at /etc/kubernetes/kubeadm.yaml:11"},
		wantPins:      []string{"registry.k8s.io/pause:3.9"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.9", "registry.internal.example/k8s/pause:3.9"},
	},
	{
		node:        "two-runtimes",
		wantImage:   "registry.k8s.io/pause:3.8",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"2 container runtimes are configured on this node"},
		wantPins:      []string{"registry.k8s.io/pause:3.8"},
		wantPrepull:   []string{"registry.k8s.io/pause:3.8"},
	},
	{
		node:        "digest",
		opts:        Options{KubeadmVersion: "v1.31.0"},
		wantImage:   "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes: []string{
			"name the same tag, one with a digest",
			"pre-pull: registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a and registry.k8s.io/pause:3.10 are one image under two names (the same tag, one with a digest)",
		},
		wantPins: []string{"registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"},
		// kubeadm looks its image up by tag: an offline node needs that name too.
		wantPrepull: []string{"registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a", "registry.k8s.io/pause:3.10"},
	},
	{
		// cri-dockerd 0.4.7 reads --pinned-images (cri-dockerd#571).
		node:        "cri-dockerd-0.4.7-pinned",
		opts:        Options{RuntimeVersion: "0.4.7"},
		wantImage:   "registry.k8s.io/pause:3.10",
		wantRuntime: "cri-dockerd", wantWinner: SourceCRIDockerdFlags,
		wantConflicts: []string{"cri-dockerd never pins --pinned-images=docker.io/library/busybox:1.36 (/etc/systemd/system/cri-docker.service.d/10-pins.conf:5): " +
			"Docker lists Docker Hub images without \"docker.io/\" (as \"busybox:1.36\"), and cri-dockerd compares raw strings; write busybox:1.36 there"},
		wantNotes: []string{
			"cri-dockerd 0.4.7 pins, beside its sandbox image, the images that --pinned-images names",
			"--pinned-images=k8s.gcr.io/pause:3.10 (/etc/systemd/system/cri-docker.service.d/10-pins.conf:6) is spelled through a registry alias",
		},
		wantKinds: []Kind{KindCRIDockerdPinsFlags, KindCRIDockerdPinNeverMatches, KindCRIDockerdPinAlias},
		wantPins: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/coredns/coredns:v1.12.0", "docker.io/library/busybox:1.36",
			"k8s.gcr.io/pause:3.10"},
		wantLabels:  []string{"io.sandboxpin.pin"},
		wantMode:    pin.ModeCRIDockerdCompat,
		wantPrepull: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/coredns/coredns:v1.12.0", "k8s.gcr.io/pause:3.10"},
	},
	{
		// No version: only 0.4.7 and later have the flags.
		node:        "cri-dockerd-0.4.7-pinned",
		wantImage:   "registry.k8s.io/pause:3.10",
		wantRuntime: "cri-dockerd", wantWinner: SourceCRIDockerdFlags,
		wantConflicts: []string{"cri-dockerd never pins --pinned-images=docker.io/library/busybox:1.36"},
		wantNotes:     []string{"cri-dockerd (of unknown version: its unit sets --pinned-images or --pinned-image-labels, which only 0.4.7 and later have) pins"},
		wantKinds:     []Kind{KindCRIDockerdPinsFlags, KindCRIDockerdPinNeverMatches},
		wantPins: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/coredns/coredns:v1.12.0", "docker.io/library/busybox:1.36",
			"k8s.gcr.io/pause:3.10"},
		wantLabels:  []string{"io.sandboxpin.pin"},
		wantMode:    pin.ModeCRIDockerdCompat,
		wantPrepull: []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/coredns/coredns:v1.12.0", "k8s.gcr.io/pause:3.10"},
	},
	{
		// kubeadm 1.36's upgrade leaves the flag (kubernetes#135807).
		node:        "kubeadm-1.36-flag",
		opts:        Options{RuntimeVersion: "2.4.2", KubeadmVersion: "v1.36.0", KubeletVersion: "v1.36.0"},
		wantImage:   "registry.k8s.io/pause:3.10.2",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantConflicts: []string{"kubelet v1.36.0 no longer has --pod-infra-container-image and will not start: remove it from KUBELET_KUBEADM_ARGS at " +
			"/var/lib/kubelet/kubeadm-flags.env:1; kubeadm v1.36.0's upgrade leaves the flag there (kubernetes#135807)"},
		wantNotes:   []string{"kubeadm v1.36.0 does not remove --pod-infra-container-image from /var/lib/kubelet/kubeadm-flags.env on upgrade"},
		wantKinds:   []Kind{KindKubeletRejectsFlag, KindKubeadmKeepsFlag},
		wantPins:    []string{"registry.k8s.io/pause:3.10.2"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.2"},
	},
	{
		// CRI-O 1.37's default is pause:3.10.1, kubeadm 1.37's 3.10.2.
		node:        "crio-1.37-kubeadm-1.37",
		opts:        Options{RuntimeVersion: "1.37.0", KubeadmVersion: "v1.37.2"},
		wantImage:   "registry.k8s.io/pause:3.10.1",
		wantRuntime: "cri-o", wantWinner: SourceRuntimeDefault,
		wantConflicts: []string{"kubeadm v1.37.2 pre-pulls and expects registry.k8s.io/pause:3.10.2 but cri-o starts sandboxes with registry.k8s.io/pause:3.10.1"},
		wantNotes: []string{"kubeadm v1.37.2 upgrade runs its pause image registry.k8s.io/pause:3.10.2 as the container of a Job",
			"is not cri-o's sandbox image as it names it, registry.k8s.io/pause:3.10.1"},
		wantKinds:   []Kind{KindKubeadmDiffers, KindKubeadmUpgradeRunsPause},
		wantPins:    []string{"registry.k8s.io/pause:3.10.1"},
		wantMode:    pin.ModeCRIOCompat,
		wantPrepull: []string{"registry.k8s.io/pause:3.10.1", "registry.k8s.io/pause:3.10.2"},
	},
	{
		// containerd 2.2 reached its end of life on 2026-11-06.
		node:        "containerd-2.2-eol",
		opts:        Options{RuntimeVersion: "2.2.10", KubeletVersion: "v1.34.3"},
		wantImage:   "registry.k8s.io/pause:3.10.1",
		wantRuntime: "containerd", wantWinner: SourceContainerdConfig,
		wantNotes: []string{
			"containerd 2.2.10 is past its end of life: upstream supported its release line 2.2 through 2026-11-06 (RELEASES.md support table @v2.4.2",
			"and it is 2026-12-06, the day sandboxpin's support table was read",
			"kubelet v1.34.3 is past its end of life: its minor 1.34 is not among the three newest Kubernetes minors",
		},
		wantKinds:   []Kind{KindEndOfLife},
		wantPins:    []string{"registry.k8s.io/pause:3.10.1"},
		wantPrepull: []string{"registry.k8s.io/pause:3.10.1"},
	},
}

func nodeRoot(t testing.TB, node string) string {
	t.Helper()
	dir := filepath.Join("testdata", "nodes", node)
	_, err := os.Stat(dir)
	require.NoError(t, err)
	return dir
}

func TestResolveNodes(t *testing.T) {
	t.Parallel()
	for _, tt := range nodeTests {
		t.Run(tt.node, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = os.DirFS(nodeRoot(t, tt.node))
			res, err := Resolve(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, tt.wantImage, res.SandboxImage, "SandboxImage")
			assert.Equal(t, tt.wantRuntime, res.Runtime, "Runtime")
			assert.Equal(t, tt.wantWinner, res.Winner.Source, "winner source")
			assert.Equal(t, res.SandboxImage, res.Winner.Image, "the winner states the sandbox image")
			assert.Contains(t, res.Candidates, res.Winner, "the winner is a candidate")
			assertKinds(t, res)
			var msgs []string
			for _, c := range res.Conflicts {
				msgs = append(msgs, c.Message)
			}
			if assert.Len(t, res.Conflicts, len(tt.wantConflicts), "conflicts: %q", msgs) {
				for i, want := range tt.wantConflicts {
					assert.Contains(t, res.Conflicts[i].Message, want)
				}
			}
			for _, want := range tt.wantNotes {
				assert.True(t, containsSub(res.Notes, want), "no note contains %q in %q", want, res.Notes)
			}
			assert.Equal(t, tt.wantPins, res.Pins, "Pins")
			wantMode := tt.wantMode
			if wantMode == "" {
				wantMode = pin.ModeStrict // Resolve writes the mode it used, never ""
			}
			assert.Equal(t, wantMode, res.PinMode, "PinMode")
			assert.Equal(t, tt.wantPrepull, res.Prepull, "Prepull")
			assert.Equal(t, tt.wantLabels, res.PinLabels, "PinLabels")
			for _, k := range tt.wantKinds {
				assert.True(t, slices.ContainsFunc(res.Notes, func(n Note) bool { return n.Kind == k }) ||
					slices.ContainsFunc(res.Conflicts, func(c Conflict) bool { return c.Kind == k }), "no note or conflict of kind %q", k)
			}
			// The pins compile into a matcher that pins the sandbox image.
			m, err := pin.Compile(res.Pins, pin.WithMode(res.PinMode))
			require.NoError(t, err)
			assert.True(t, m.IsPinned(res.SandboxImage), "IsPinned(%q)", res.SandboxImage)
			// So does the runtime's own matcher.
			own, err := res.RuntimeMatcher()
			require.NoError(t, err)
			assert.True(t, own.IsPinned(res.SandboxImage), "RuntimeMatcher().IsPinned(%q)", res.SandboxImage)
			// Every origin of a file candidate is file:line inside the tree.
			for _, c := range res.Candidates {
				if strings.HasPrefix(c.Origin, "/") {
					assert.Regexp(t, `^/[^:]+:[1-9][0-9]*$`, c.Origin)
				}
			}
		})
	}
}

// containsSub reports whether the text of an element of list (a string,
// or a Note's message) contains sub.
func containsSub[T any](list []T, sub string) bool {
	for _, s := range list {
		if strings.Contains(fmt.Sprint(s), sub) {
			return true
		}
	}
	return false
}

// fakeLive is a LiveRuntime with a canned answer.
type fakeLive struct {
	info criinfo.Info
	err  error
}

func (f fakeLive) Info(context.Context) (criinfo.Info, error) { return f.info, f.err }

func TestResolveEdgeCases(t *testing.T) {
	t.Parallel()
	v2 := func(img string) string {
		return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"" + img + "\"\n"
	}
	tests := []struct {
		name          string
		files         map[string]string
		opts          Options
		wantImage     string          // SandboxImage
		wantRuntime   criinfo.Runtime // Runtime
		wantConflicts int             // number of conflicts
		wantOneSided  int             // conflicts with a zero B
		wantNotes     []string        // substrings some note has
		wantPrepull   []string        // Prepull, nil to skip
	}{
		{
			name:        "empty node",
			files:       map[string]string{},
			wantRuntime: criinfo.RuntimeUnknown,
			wantNotes:   []string{"no container runtime found"},
		},
		{
			name:        "live containerd 1.x report wins over the file, conflict says restart",
			files:       map[string]string{ctrMain: v2("mirror.example/pause:3.9")},
			opts:        Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "v1.6.20", SandboxImage: "registry.k8s.io/pause:3.6", SandboxImageReported: true}}},
			wantImage:   "registry.k8s.io/pause:3.6",
			wantRuntime: "containerd", wantConflicts: 1,
		},
		{
			name:        "live containerd 2.x reports nothing: its version picks the default",
			files:       map[string]string{},
			opts:        Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "v2.2.9"}}},
			wantImage:   "registry.k8s.io/pause:3.10.1",
			wantRuntime: "containerd",
		},
		{
			name:        "live alias differs from file: a note",
			files:       map[string]string{ctrMain: v2("k8s.gcr.io/pause:3.8")},
			opts:        Options{Live: fakeLive{info: criinfo.Info{Runtime: "containerd", RuntimeVersion: "1.7.3", SandboxImage: "registry.k8s.io/pause:3.8", SandboxImageReported: true}}},
			wantImage:   "registry.k8s.io/pause:3.8",
			wantRuntime: "containerd",
			wantNotes:   []string{"registry alias"},
		},
		{
			name:        "unknown containerd version and no file value",
			files:       map[string]string{ctrMain: "version = 2\n"},
			wantRuntime: "containerd",
			wantNotes:   []string{"cannot tell containerd's sandbox image"},
		},
		{
			name:        "kubelet endpoint picks CRI-O among two runtimes",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.9"), crioMain: "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n", kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/crio/crio.sock\"\n"},
			wantImage:   "registry.k8s.io/pause:3.10",
			wantRuntime: "cri-o",
			wantNotes:   []string{"2 container runtimes are configured"},
		},
		{
			name:        "Options.Runtime forces containerd",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.9"), crioMain: "[crio.image]\npause_image = \"registry.k8s.io/pause:3.10\"\n"},
			opts:        Options{Runtime: "containerd"},
			wantImage:   "registry.k8s.io/pause:3.9",
			wantRuntime: "containerd",
		},
		{
			name:          "invalid reference",
			files:         map[string]string{ctrMain: v2("Registry.k8s.io/Pause:3.9")},
			wantImage:     "Registry.k8s.io/Pause:3.9",
			wantRuntime:   "containerd",
			wantConflicts: 1, wantOneSided: 1,
		},
		{
			name:        "kubelet 1.30 flag that differs is only a note",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.9"), kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=registry.k8s.io/pause:3.8\"\n"},
			opts:        Options{KubeletVersion: "1.30.1"},
			wantImage:   "registry.k8s.io/pause:3.9",
			wantRuntime: "containerd",
			wantNotes:   []string{"ignores --pod-infra-container-image", "differs from the runtime's"},
		},
		{
			name:        "kubelet 1.28 flag alias is a note",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.9"), kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS=\"--pod-infra-container-image=k8s.gcr.io/pause:3.9\"\n"},
			opts:        Options{KubeletVersion: "1.28.1"},
			wantImage:   "registry.k8s.io/pause:3.9",
			wantRuntime: "containerd",
			wantNotes:   []string{"registry alias"},
		},
		{
			name:        "kubeadm version from kubernetesVersion",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.10"), "k.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.31.1\n"},
			opts:        Options{KubeadmConfigPath: "k.yaml"},
			wantImage:   "registry.k8s.io/pause:3.10",
			wantRuntime: "containerd",
			wantNotes:   []string{"kubernetesVersion v1.31.1"},
			wantPrepull: []string{"registry.k8s.io/pause:3.10"},
		},
		{
			name:        "unknown kubeadm version is a note",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.10")},
			opts:        Options{KubeadmVersion: "v1.99.0"},
			wantImage:   "registry.k8s.io/pause:3.10",
			wantRuntime: "containerd",
			wantNotes:   []string{"unknown version"},
		},
		{
			name:          "containerd 1.x with a version 3 config",
			files:         map[string]string{ctrMain: "version = 3\n"},
			opts:          Options{RuntimeVersion: "1.7.0"},
			wantImage:     "registry.k8s.io/pause:3.8",
			wantRuntime:   "containerd",
			wantConflicts: 1, wantOneSided: 1,
		},
		{
			name:        "k3s preferred over a leftover /etc/containerd",
			files:       map[string]string{ctrMain: v2("registry.k8s.io/pause:3.9"), "var/lib/rancher/k3s/agent/etc/containerd/config.toml": v2("rancher/mirrored-pause:3.6")},
			wantImage:   "rancher/mirrored-pause:3.6",
			wantRuntime: "containerd",
			wantNotes:   []string{"is also a containerd config"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			requireResolved(t, res, err)
			assert.Equal(t, tt.wantImage, res.SandboxImage, "SandboxImage")
			assert.Equal(t, tt.wantRuntime, res.Runtime, "Runtime")
			assert.Len(t, res.Conflicts, tt.wantConflicts, "conflicts %+v", res.Conflicts)
			oneSided := 0
			for _, c := range res.Conflicts {
				if c.B.IsZero() {
					oneSided++
				}
			}
			assert.Equal(t, tt.wantOneSided, oneSided, "one-sided conflicts")
			for _, want := range tt.wantNotes {
				assert.True(t, containsSub(res.Notes, want), "no note contains %q in %q", want, res.Notes)
			}
			if tt.wantPrepull != nil {
				assert.Equal(t, tt.wantPrepull, res.Prepull)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	liveErr := errors.New("connection refused")
	tests := []struct {
		name     string
		files    map[string]string
		opts     Options
		wantIs   error  // errors.Is target
		wantPath string // ConfigError.Path, "" when not a ConfigError
	}{
		{name: "malformed containerd", files: map[string]string{ctrMain: "version = \n"}, wantIs: ErrInvalidConfig, wantPath: "/etc/containerd/config.toml"},
		{name: "malformed import", files: map[string]string{ctrMain: "imports = ['x.toml']\n", "etc/containerd/x.toml": "[a\n"}, wantIs: ErrInvalidConfig, wantPath: "/etc/containerd/x.toml"},
		{name: "malformed kubelet env", files: map[string]string{kubeletFlagsEnv: "KUBELET_KUBEADM_ARGS='x\n"}, wantIs: ErrInvalidConfig, wantPath: "/var/lib/kubelet/kubeadm-flags.env"},
		{name: "missing kubeadm config", opts: Options{KubeadmConfigPath: "/etc/kubeadm.yaml"}, wantIs: os.ErrNotExist},
		{name: "live error", opts: Options{Live: fakeLive{err: liveErr}}, wantIs: liveErr},
		{name: "bad runtime", opts: Options{Runtime: "docker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Root = nodetest.MapFS(tt.files)
			res, err := Resolve(context.Background(), opts)
			assert.Nil(t, res)
			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			var ce *ConfigError
			if tt.wantPath != "" && assert.ErrorAs(t, err, &ce) {
				assert.Equal(t, tt.wantPath, ce.Path)
				assert.Positive(t, ce.Line)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Resolve(ctx, Options{Root: fstest.MapFS{}})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	res, err := Resolve(context.Background(), Options{Root: os.DirFS(nodeRoot(t, "containerd-2.2-v3-ignored-v2-key")), RuntimeVersion: "2.2.9"})
	require.NoError(t, err)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	s := string(b)
	assert.Contains(t, s, `"sandboxImage":"registry.k8s.io/pause:3.10.1"`)
	assert.Contains(t, s, `"source":"runtime-default"`)
	assert.Contains(t, s, `"role":"runtime-uses"`)
	assert.Contains(t, s, `"origin":"/etc/containerd/config.toml:6"`)
	assert.NotContains(t, s, `"b":`, "a one-sided conflict omits b")
	assert.Contains(t, s, `"pinMode":"strict"`)
}

func TestExactPinNotes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		img      string // sandbox_image
		version  string // containerd version
		wantNote string // substring of a note, "" for none about pinning
	}{
		{name: "old 1.6 never pins", img: "registry.k8s.io/pause:3.6", version: "1.6.20", wantNote: "never reports Image.pinned"},
		{name: "1.6.22 pins CRI pulls only", img: "registry.k8s.io/pause:3.6", version: "1.6.22", wantNote: "not pinned until 1.6.29 and 1.7.14"},
		{name: "1.7.13 pins CRI pulls only", img: "registry.k8s.io/pause:3.8", version: "1.7.13", wantNote: "only when its CRI plugin pulls it"},
		{name: "1.6.29 pins", img: "registry.k8s.io/pause:3.6", version: "1.6.29"},
		{name: "1.7.14 pins", img: "registry.k8s.io/pause:3.8", version: "1.7.14"},
		{name: "1.5 never pins", img: "registry.k8s.io/pause:3.5", version: "1.5.18", wantNote: "never reports Image.pinned"},
		{name: "1.7 alias", img: "k8s.gcr.io/pause:3.10.1", version: "1.7.35", wantNote: "never pins an alias spelling"},
		{name: "2.x alias", img: "k8s.gcr.io/pause:3.10.1", version: "2.3.7", wantNote: "not when it is stored as registry.k8s.io/pause:3.10.1"},
		{name: "2.x tag and digest", img: "registry.k8s.io/pause:3.10.1@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
			version: "2.4.2", wantNote: "a pull of name:tag@digest stores name@digest"},
		{name: "1.x tag and digest", img: "registry.k8s.io/pause:3.10.1@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
			version: "1.7.35", wantNote: "it drops the tag before comparing"},
		{name: "1.7.2 never pins", img: "registry.k8s.io/pause:3.8", version: "v1.7.2", wantNote: "never reports Image.pinned"},
		{name: "2.x short name", img: "pause:3.10", version: "2.1.0", wantNote: "stored as docker.io/library/pause:3.10"},
		{name: "2.x tagless", img: "registry.k8s.io/pause", version: "2.1.0", wantNote: "stored as registry.k8s.io/pause:latest"},
		{name: "2.x full name", img: "registry.k8s.io/pause:3.10", version: "2.1.0"},
		{name: "1.7 short name is fine", img: "pause:3.10", version: "1.7.20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Resolve(context.Background(), Options{
				Root:           nodetest.MapFS(map[string]string{ctrMain: "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"" + tt.img + "\"\n"}),
				RuntimeVersion: tt.version,
			})
			require.NoError(t, err)
			if tt.wantNote != "" {
				assert.True(t, containsSub(res.Notes, tt.wantNote), "no note contains %q in %q", tt.wantNote, res.Notes)
			} else {
				assert.False(t, containsSub(res.Notes, "pins the sandbox image") || containsSub(res.Notes, "Image.pinned"),
					"unexpected pin note in %q", res.Notes)
			}
		})
	}
}

func TestCRIDockerdVersion(t *testing.T) {
	t.Parallel()
	// cri-dockerd reports RuntimeName "docker" and the Docker Engine's
	// version over CRI (core/docker_service.go at v0.3.16).
	unit := "lib/systemd/system/cri-docker.service"
	tests := []struct {
		name       string
		flag       string // --pod-infra-container-image, "" for none
		live       criinfo.Info
		version    string // Options.RuntimeVersion
		wantImage  string
		wantNote   string // a substring of some note
		wantNoNote string // a substring no note has
	}{
		{
			name: "Docker's version is not cri-dockerd's", live: criinfo.Info{Runtime: "cri-dockerd", RuntimeVersion: "28.0.1"},
			wantNote: "its CRI Version RPC reports the Docker Engine's version (28.0.1)", wantNoNote: "cri-dockerd 28.0.1",
		},
		{
			name: "Docker's version from criinfo/cri", live: criinfo.Info{Runtime: "cri-dockerd", EngineVersion: "20.10.24+dfsg1"},
			wantNote: "its CRI Version RPC reports the Docker Engine's version (20.10.24+dfsg1)", wantNoNote: "cri-dockerd 20.10",
		},
		{
			name: "own version picks the default", live: criinfo.Info{Runtime: "cri-dockerd", RuntimeVersion: "28.0.1"},
			version: "0.3.16", wantImage: "registry.k8s.io/pause:3.9", wantNoNote: "Docker Engine's version",
		},
		{name: "0.3.9 never pins", version: "0.3.9", flag: "registry.k8s.io/pause:3.6", wantImage: "registry.k8s.io/pause:3.6", wantNote: "never reports Image.pinned (added in 0.3.10)"},
		{name: "Docker Hub image by its familiar name", version: "0.4.3", flag: "rancher/mirrored-pause:3.6", wantImage: "rancher/mirrored-pause:3.6", wantNoNote: "as `docker images` shows it"},
		{name: "Docker Hub image fully qualified", version: "0.4.3", flag: "docker.io/rancher/mirrored-pause:3.6", wantImage: "docker.io/rancher/mirrored-pause:3.6",
			wantNote: "write rancher/mirrored-pause:3.6 there, as `docker images` shows it"},
		{name: "other registry short of its tag", version: "0.3.17", flag: "registry.k8s.io/pause", wantImage: "registry.k8s.io/pause", wantNote: "write registry.k8s.io/pause:latest there"},
		{name: "digest only: no tag to suggest", version: "0.4.4", flag: "registry.k8s.io/pause@sha256:" + strings.Repeat("a", 64),
			wantImage: "registry.k8s.io/pause@sha256:" + strings.Repeat("a", 64),
			wantNote:  "is never pinned; write the name:tag `docker images` shows for sha256:aaaa", wantNoNote: "pause:latest"},
		{name: "alias", version: "0.4.4", flag: "k8s.gcr.io/pause:3.10.1", wantImage: "k8s.gcr.io/pause:3.10.1",
			wantNote: "cri-dockerd 0.4.4 never pins an alias spelling: k8s.gcr.io/pause:3.10.1"},
		{name: "other registry in full", version: "0.3.17", flag: "registry.k8s.io/pause:3.10", wantImage: "registry.k8s.io/pause:3.10", wantNoNote: "as `docker images` shows it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			exec := "ExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd://"
			if tt.flag != "" {
				exec += " --pod-infra-container-image=" + tt.flag
			}
			opts := Options{Root: nodetest.MapFS(map[string]string{unit: "[Service]\n" + exec + "\n"}), RuntimeVersion: tt.version}
			if tt.live.Runtime != "" {
				opts.Live = fakeLive{info: tt.live}
			}
			res, err := Resolve(context.Background(), opts)
			requireResolved(t, res, err)
			assert.Equal(t, criinfo.RuntimeCRIDockerd, res.Runtime)
			assert.Equal(t, tt.wantImage, res.SandboxImage)
			if tt.wantNote != "" {
				assert.True(t, containsSub(res.Notes, tt.wantNote), "no note contains %q in %q", tt.wantNote, res.Notes)
			}
			if tt.wantNoNote != "" {
				assert.False(t, containsSub(res.Notes, tt.wantNoNote), "a note contains %q in %q", tt.wantNoNote, res.Notes)
			}
		})
	}
}
