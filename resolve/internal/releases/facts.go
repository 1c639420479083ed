package releases

import "strings"

// Fact names a behaviour of one component that holds over some releases.
type Fact int

// The facts. Each [Row] of [Facts] says where it holds, where it was read,
// and (in Value) the note users read, a format whose first verb is the
// component's version unless the row says otherwise.
const (
	ContainerdNeverPins             Fact = iota // never sets Image.pinned
	ContainerdPinsCRIPulls                      // pins only images its CRI plugin pulls
	ContainerdConfig4                           // reads config version 4, migrates a version 3 sandbox_image
	ContainerdTaglessNeverPinned                // a tagless pinned_images value never pins (containerd#13314)
	ContainerdNoSandboxReport                   // reports its sandbox image nowhere over CRI
	ContainerdAliasNeverPinned                  // an alias spelling pins nothing
	ContainerdTagDigestNeverPinned              // name:tag@digest pins nothing (2.x)
	ContainerdTagDigestDropsTag                 // name:tag@digest pins only name@digest (1.x)
	ContainerdShortNeverPinned                  // a short name pins nothing (2.x)
	ContainerdSandboxNotFound                   // a sandbox image not written in full starts no pod (2.3.0–2.3.3)
	ContainerdPausePullOff                      // disable_pause_image_pull: the sandbox image is not pulled for that handler
	CRIDockerdNeverPins                         // never sets Image.pinned
	CRIDockerdAliasNeverPinned                  // an alias spelling pins only while Docker stores that name
	CRIDockerdDigestOnlyNeverPinned             // name@digest pins nothing: RepoTags hold no digest
	CRIDockerdDigestNeverPinned                 // name:tag@digest pins nothing
	CRIDockerdOtherSpelling                     // only the familiar name:tag pins
	CRIONoSandboxReport                         // no config.sandboxImage in the Status Info
	CRIONeverPins                               // never sets Image.pinned
	CRIOFirstNameOnly                           // matches only an image's first stored name
	CRIOShortNameEnforcing                      // short_name_mode = "enforcing" by default
	CRIOShortNeverPinned                        // a short pause_image pins nothing; first verb: "CRI-O VERSION"
	CRIOAliasNeverPinned                        // an alias pause_image pins only that name; first verb: "CRI-O VERSION"
	KubeletIgnoresPinned                        // ignores Image.pinned
	KubeletProtectsDefault                      // keeps its built-in default out of image GC; no runtime image known
	KubeletProtectsRuntimeImage                 // ... and that default is the runtime's image
	KubeletProtectsOtherImage                   // ... and the runtime's image is another
	KubeletIgnoresFlag                          // ignores --pod-infra-container-image for image GC
	KubeletRejectsFlag                          // no longer has --pod-infra-container-image
	KubeadmKeepsFlag                            // upgrade no longer removes --pod-infra-container-image from kubeadm-flags.env
	KubeadmUpgradeRunsPause                     // upgrade runs kubeadm's pause image as a Job's container
	CRIDockerdPinsFlags                         // pins what --pinned-images and --pinned-image-labels name
	ContainerdPinnedLabel                       // pins an image labelled io.cri-containerd.pinned=pinned at once; args: version, name, name
	ContainerdPinnedLabelAtStart                // ... only once it stores the reference anew (a restart); args: version, name, name
	numFacts
)

// facts holds one row per Fact, in the order of the constants.
var facts = [numFacts][]Row{
	ContainerdNeverPins: {
		{Containerd, Range{"", "1.6.22"}, containerdNeverPins, "PinnedImageLabelKey in pkg/cri/labels/labels.go and pkg/cri/server/image_pull.go: absent @v1.6.21, present @v1.6.22; seen live on 1.6.20 (internal/kubelettest TestKubeletGC)"},
		{Containerd, Range{"1.7", "1.7.3"}, containerdNeverPins, "the same files: absent @v1.7.2, present @v1.7.3"},
	},
	ContainerdPinsCRIPulls: {
		{Containerd, Range{"1.6.22", "1.6.29"}, "containerd %s pins the sandbox image only when its CRI plugin pulls it: an image imported or pulled " +
			"outside CRI (`ctr images import`, an air-gapped node) is not pinned until 1.6.29 and 1.7.14; " +
			"upgrade containerd, pull it through CRI (`crictl pull`), or pin it through a CRI shim",
			"pkg/cri/server/image_pull.go updateImage passes the reference to getLabels from 2d43994fb (v1.6.29) and 26c057423 (v1.7.14)"},
		{Containerd, Range{"1.7.3", "1.7.14"}, "", "as above"},
	},
	ContainerdConfig4: {
		{Containerd, Range{"2.3.0-rc.0", ""}, "", "version/version.go ConfigVersion = 4 @v2.3.0-rc.0; 3 @v2.3.0-beta.0…-beta.2 and in 2.0–2.2"},
	},
	ContainerdTaglessNeverPinned: {
		{Containerd, Range{"2.0", ""}, "containerd %s never pins %s (%s), which is stored as %s: pinned_images compares strings, " +
			"and a value without a tag never matches (containerd#13314); write %s there",
			"internal/cri/server/images/image_pull.go getLabels compares each pinned_images value with == against the image name in its ParseDockerRef form " +
				"@v2.0.0, @v2.2.10, @v2.3.7, @v2.4.2 and on main 301026e58; no tag or branch holds a fix: containerd#13336 and #13417 are open, " +
				"#13501 (ec5c899a4) was closed unmerged; seen live on 2.2.9, 2.3.7, 2.4.2 (internal/crilive TestLiveMatrix)"},
	},
	ContainerdNoSandboxReport: {
		{Containerd, Range{"2.0", ""}, "containerd 2.x does not report its sandbox image over CRI and no config file sets it",
			"seen live on 2.2.9 and 2.4.2 (criinfo testdata); plugins/cri/images/plugin.go sets no exports @v2.2.10, @v2.3.7, @v2.4.0-beta.0, " +
				"and only DiscardUnpackedLayers and RegistryConfigPath @v2.4.2 (containerd#13940, 93f38adbc)"},
	},
	ContainerdAliasNeverPinned: {
		{Containerd, Range{"1.6.22", ""}, "containerd %s never pins an alias spelling: %s (%s) is pinned only while the image is stored under that name, " +
			"not when it is stored as %s; write the name the image is stored under there",
			"pkg/cri/server/image_pull.go getLabels (ParseDockerRef, no aliases) @v1.7.35; internal/cri/server/images/image_pull.go @v2.2.9, @v2.3.7, @v2.4.2; seen live on 1.7.35, 2.2.9, 2.3.7, 2.4.2 (internal/crilive TestLiveMatrix)"},
	},
	ContainerdTagDigestNeverPinned: {
		{Containerd, Range{"2.0", ""}, "containerd %s never pins %s (%s): a pull of name:tag@digest stores name@digest, and pinned_images " +
			"compares strings; write %s or %s there", "internal/cri/server/images/image_pull.go @v2.2.9, @v2.4.2; seen live on 2.2.9"},
	},
	ContainerdTagDigestDropsTag: {
		{Containerd, Range{"1.6.22", "2.0"}, "containerd %s pins %s (%s) only under %s: it drops the tag before comparing, so the image stored as %s is not pinned",
			"pkg/cri/server/image_pull.go getLabels @v1.7.35 (ParseDockerRef keeps only the digest); internal/cri/server/images/image_pull.go compares strings @v2.0.0"},
	},
	ContainerdShortNeverPinned: {
		{Containerd, Range{"2.0", ""}, "containerd %s pins the sandbox image by exact string, but %s (%s) is a short name stored as %s: " +
			"it will not be pinned; write the full name %s there", "internal/cri/server/images/image_pull.go getLabels @v2.0.0, @v2.4.2; seen live on 2.2.9, 2.3.7, 2.4.2"},
	},
	ContainerdSandboxNotFound: {
		{Containerd, Range{"2.3.0-beta.0", "2.3.4"}, "containerd %s starts no pod: its sandbox image %s (%s) is not written in full, and containerd 2.3.0 to 2.3.3 " +
			"look the image up by that string while they store it as %s, so every RunPodSandbox fails with \"failed to get sandbox image\" (containerd#13529); " +
			"write %s there, or upgrade containerd to 2.3.4 or later",
			"internal/cri/server/podsandbox/sandbox_run.go Controller.Start calls c.client.GetImage(ctx, sandboxImage) as configured @v2.3.0-beta.0, @v2.3.3 " +
				"(the pause-pull refactor of containerd#12849, c4a09c5a5); ParseDockerRef first @v2.3.4 (containerd#13759) and @v2.4.0-beta.0 (containerd#13513); " +
				"seen live: 2.3.3 fails RunPodSandbox for pause:3.10.1 and registry.k8s.io/pause, 2.3.7 and 2.4.2 start both (internal/containerdtest TestLiveSandboxRun)"},
	},
	ContainerdPausePullOff: {
		{Containerd, Range{"2.4.0-beta.0", ""}, "containerd %s does not pull the sandbox image for the pods of runtime handler %q (disable_pause_image_pull = true at %s): " +
			"with the podsandbox sandboxer %s must already be stored, or those pods do not start; pre-pull it",
			"internal/cri/server/sandbox_run.go RunPodSandbox skips ensurePauseImageExists when the handler's DisablePauseImagePull is set, " +
				"internal/cri/config/config.go Runtime.DisablePauseImagePull @v2.4.0-beta.0, @v2.4.2 (containerd#13424)"},
	},
	CRIDockerdNeverPins: {
		{CRIDockerd, Range{"", "0.3.10"}, "cri-dockerd %s never reports Image.pinned (added in 0.3.10): kubelet 1.29 and later may " +
			"garbage-collect the sandbox image; upgrade cri-dockerd or pin it through a CRI shim", "core/image.go isPinned: absent @v0.3.9, present @v0.3.10"},
	},
	CRIDockerdAliasNeverPinned: {
		{CRIDockerd, Range{"0.3.10", ""}, "cri-dockerd %s never pins an alias spelling: %s (%s) is pinned only while Docker stores the image under that " +
			"very name (`docker tag %s %s`), not when it is stored as %s; write the name `docker images` shows there",
			"core/image.go isPinned @v0.3.10; seen live on 0.4.0 and 0.4.4 (internal/crilive TestLiveCRIDockerdMatrix)"},
	},
	CRIDockerdDigestOnlyNeverPinned: {
		{CRIDockerd, Range{"0.3.10", ""}, "cri-dockerd %s pins the sandbox image by exact string against Docker's RepoTags, which hold no digest: " +
			"%s (%s) is never pinned; write the name:tag `docker images` shows for %s there", "core/image.go isPinned @v0.3.10; seen live on 0.3.14, 0.4.4"},
	},
	CRIDockerdDigestNeverPinned: {
		{CRIDockerd, Range{"0.3.10", ""}, "cri-dockerd %s pins the sandbox image by exact string against Docker's RepoTags, which hold no digest: " +
			"%s (%s) is never pinned; write %s there, as `docker images` shows it", "core/image.go isPinned @v0.3.10; seen live on 0.3.14, 0.4.4"},
	},
	CRIDockerdOtherSpelling: {
		{CRIDockerd, Range{"0.3.10", ""}, "cri-dockerd %s pins the sandbox image by exact string against Docker's RepoTags, which hold %s for this image: " +
			"%s (%s) will not be pinned; write %s there, as `docker images` shows it",
			"core/image.go isPinned @v0.3.10; seen live on 0.3.14, 0.4.4: docker.io/library/pause:3.10.1 does not pin, pause:3.10.1 does"},
	},
	CRIONoSandboxReport: {
		{CRIO, Range{"", "1.27"}, "CRI-O %s does not report its pause image over CRI (config.sandboxImage arrived in 1.27.0): " +
			"it was read from the config files or the built-in default", "server/runtime_status.go: absent @v1.26.0, present @v1.27.0, @v1.36.3"},
	},
	CRIONeverPins: {
		{CRIO, Range{"", "1.28"}, "CRI-O %s never reports Image.pinned (pinned_images and the pinning of pause_image arrived in 1.28.0): " +
			"kubelet 1.29 and later may garbage-collect the sandbox image; upgrade CRI-O or pin it through a CRI shim",
			"pkg/config/config.go has no pinned_images @v1.27.0; internal/storage/image.go GetImageService pins pause_image @v1.28.0, @v1.36.3"},
	},
	CRIOFirstNameOnly: {
		{CRIO, Range{"1.28", "1.29"}, "CRI-O %s matches pause_image and pinned_images against only the first name each image is stored under " +
			"(every name since 1.29.0): an image stored under several names may stay unpinned",
			"internal/storage/image.go getImageCacheItem FilterPinnedImage(name) @v1.28.0, @v1.28.11; buildImageResult ranges image.Names @v1.29.0"},
	},
	CRIOShortNameEnforcing: {
		{CRIO, Range{"1.34", ""}, "CRI-O %s resolves a short name in short_name_mode \"enforcing\" (the default since 1.34.0, cri-o#9401): " +
			"pulling %s (%s) fails when registries.conf lists several unqualified-search registries; write the full name %s there",
			"pkg/config/config.go ShortNameMode, default \"enforcing\", and docs/crio.conf.5.md short_name_mode @v1.34.0, @v1.36.3; absent @v1.33.0"},
	},
	CRIOShortNeverPinned: {
		{CRIO, Range{"1.28", ""}, "%s pins the pause image by an exact, case-insensitive compare with the names it stores, but %s (%s) " +
			"is not a full name (CRI-O stores images as domain/path:tag, here %s): it will not be pinned; write the full name %s there",
			"internal/storage/image.go GetImageService and CompileRegexpsForPinnedImages (\"(?i)^\" + QuoteMeta + \"$\") @v1.28.0, @v1.36.3; seen live on 1.36.3 (criinfo/cri TestLiveCRIOCompat)"},
	},
	CRIOAliasNeverPinned: {
		{CRIO, Range{"1.28", ""}, "%s pins the pause image only under the name %s (%s), compared exactly up to case; the same image stored as %s " +
			"(as kubeadm pre-pulls it) is not pinned: write %s there, or pin it with pinned_images",
			"as CRIOShortNeverPinned; seen live on 1.36.3 (cmd/sandboxpin TestCRIOLive, internal/kubelettest TestKubeletGC)"},
	},
	KubeletIgnoresPinned: {
		{Kubelet, Range{"", "1.23.0"}, "kubelet %s ignores Image.pinned (honoured from 1.23.0): only --%s protects the sandbox image from image GC",
			"pkg/kubelet/images/image_gc_manager.go: image.Pinned absent @v1.22.0, present @v1.23.0"},
	},
	KubeletProtectsDefault: {
		{Kubelet, Range{"", "1.29.0-alpha.1"}, "kubelet %s keeps its built-in default %s out of image GC (no --%s is set)", kubeletProtectsRead},
	},
	KubeletProtectsRuntimeImage: {
		{Kubelet, Range{"", "1.29.0-alpha.1"}, "kubelet %s keeps its built-in default %s out of image GC even without --%s: that is the runtime's sandbox image, " +
			"protected until the kubelet is upgraded to 1.29, which stops doing so", kubeletProtectsRead},
	},
	KubeletProtectsOtherImage: {
		{Kubelet, Range{"", "1.29.0-alpha.1"}, "kubelet %s keeps its built-in default %s out of image GC (no --%s is set), not the runtime's %s (%s): " +
			"only the runtime's own pin protects that one", kubeletProtectsRead},
	},
	KubeletIgnoresFlag: {
		{Kubelet, Range{"1.29.0-alpha.1", "1.35"}, "kubelet %s ignores --%s (%s) for image garbage collection: only the runtime's pinning protects the sandbox image; " +
			"remove the flag from %s before upgrading to 1.35, which rejects it", kubeletProtectsRead},
	},
	KubeletRejectsFlag: {
		{Kubelet, Range{"1.35.0-rc.0", ""}, "kubelet %s no longer has --%s and will not start: remove it from %s at %s",
			"pkg/kubelet/config/flags.go defines it, deprecated, @v1.34.0; no kubelet source defines it @v1.35.0-rc.0 (module k8s.io/kubernetes " +
				"from the Go module proxy), @v1.35.0, @v1.37.2 (kubernetes#133779, cited by kops#17657 on 2025-10-11), so the flag parser refuses it; " +
				"rc.1 lies between two tags without it; the proxy refuses the 1.35 alphas and beta.0, so a 1.35 pre-release before rc.0 is in no row " +
				"(resolve checks that kubelet as one of unknown version); " +
				"kubeadm's post-upgrade phase removes it from kubeadm-flags.env only (cmd/kubeadm/app/cmd/phases/upgrade/postupgrade.go @v1.35.0, kubernetes#133778)"},
	},
	KubeadmKeepsFlag: {
		{Kubeadm, Range{"1.36.0-rc.0", ""}, "kubeadm %s does not remove --%s from %s on upgrade (kubeadm 1.35 did, and only from that file; kubernetes#135807): " +
			"wherever the flag is left it stays, and kubelet 1.35 and later refuses to start with it; remove it yourself before upgrading the kubelet",
			"cmd/kubeadm/app/cmd/phases/upgrade/postupgrade.go runPostUpgrade passes RemoveKubeletArgsFromFile an empty unwantedFlags list " +
				"@v1.36.0-rc.0, @v1.36.0, @v1.36.3, @v1.37.2; the list holds \"pod-infra-container-image\" @v1.35.0, @v1.35.4 (kubernetes#133778); " +
				"@v1.34.0 there is no such cleanup and cmd/kubeadm/app/phases/kubelet/flags.go writes the flag"},
	},
	KubeadmUpgradeRunsPause: {
		{Kubeadm, Range{"1.18.0-alpha.1", "1.30.0-alpha.2"}, "kubeadm %s upgrade runs its pause image %s as the container of a Job (the CreateJob pre-flight check) " +
			"on a schedulable node, control-plane nodes included, whose kubelet pulls it as a workload image; from kubeadm 1.30 the upgrade fails " +
			"unless the Job completes within 15 seconds (60 from kubeadm 1.36, kubernetes#136273), so a slow pull can fail it: " +
			"pre-pull the image with `kubeadm config images pull`, or skip the check with --ignore-preflight-errors=CreateJob",
			"cmd/kubeadm/app/phases/upgrade/health.go createJob: container image images.GetPauseImage(cfg), timeout 15 s, " +
				"but a deferred Job deletion overwrites the named error result @v1.18.0-alpha.1 (the proxy refuses alpha.0), @v1.18.0-beta.0, @v1.18.0, @v1.19.0, @v1.26.0, @v1.27.13, @v1.29.15, @v1.30.0-alpha.0 (kubernetes/kubeadm#3050); " +
				"no Job there @v1.16.0, @v1.17.0"},
		{Kubeadm, Range{"1.30.0-alpha.2", "1.36.0-rc.0"}, "", "the same, the timeout an error, @v1.30.0-alpha.2 (the proxy refuses alpha.1), @v1.30.0-alpha.3, @v1.30.0-rc.0, @v1.30.0, @v1.34.0, @v1.35.0, @v1.35.4"},
		{Kubeadm, Range{"1.36.0-rc.0", ""}, "", "the same with timeout 60 s @v1.36.0-rc.0, @v1.36.0, @v1.36.3, @v1.37.2 (kubernetes#136273); " +
			"upgrade apply's preflight phase and upgrade plan call CheckClusterHealth (cmd/kubeadm/app/cmd/phases/upgrade/apply/preflight.go, cmd/kubeadm/app/cmd/upgrade/common.go @v1.36.0)"},
	},
	CRIDockerdPinsFlags: {
		{CRIDockerd, Range{"0.4.7", ""}, "cri-dockerd %s pins, beside its sandbox image, the images that --pinned-images names and those " +
			"--pinned-image-labels selects (cri-dockerd#571): raw, case-sensitive strings compared with the names `docker images` shows " +
			"(a trailing * a prefix, a bare repository every tag of it), with no normalization; put the name `docker images` shows for an image there to pin it",
			"core/pinned.go newPinnedImageMatcher and matches, core/pinned_test.go, read at commits 89da1c1793ab and fcde94e77660 of cri-dockerd#571, " +
				"first released in v0.4.7 (2026-09-09; v0.4.10 the newest): no v0.4.7 or later tag could be read (the mirror holds none, the Go module proxy " +
				"refuses v0.4.7 and v0.4.10), nor config/options.go's flag definitions, so a comma-separated and a repeated flag are both read (pin.ModeCRIDockerdCompat)"},
	},
	ContainerdPinnedLabel: {
		{Containerd, Range{"1.6.25", "1.7"}, "containerd %s reports pinned for an image one of whose names carries its label " + pinnedLabel +
			", whatever its config names, and keeps the label across restarts and CRI pulls: label %s (`ctr -n k8s.io images label %s " + pinnedLabel +
			"`); a re-import of that name through ctr 2.x's transfer service (ctr without --local) drops the label",
			"pkg/cri/store/image/image.go getImage (Pinned from PinnedImageLabelKey) and Store.update, which pins and unpins per reference " +
				"(containerd#8867: b49815300 @v1.6.25, absent @v1.6.24; a2b16d7f9 @v1.7.10, absent @v1.7.9); pkg/cri/server/image_pull.go getLabels and " +
				"createImageReference add the label and never remove it, at a pull and for every image at start-up (restart.go), @v1.7.35; " +
				"internal/cri/store/image/image.go and internal/cri/server/images/image_pull.go UpdateImage and createOrUpdateImageReference @v2.4.2; " +
				"core/transfer/image/imagestore.go Store updates the whole record of a name it imports @v2.4.2; seen live on 1.7.35 and 2.4.2 " +
				"(internal/containerdtest TestPinnedLabel: pinned at once, after a restart, after a CRI pull and removal of the configured name; " +
				"a re-import keeps the label client-side on 1.7.35 and drops it through the transfer service on 2.4.2)"},
		{Containerd, Range{"1.7.10", ""}, "", "as above"},
	},
	ContainerdPinnedLabelAtStart: {
		{Containerd, Range{"1.6.22", "1.6.25"}, "containerd %s reads its label " + pinnedLabel + " only when it stores an image reference anew: " +
			"a label set on an image it holds is reported once containerd restarts (containerd#9328): label %s " +
			"(`ctr -n k8s.io images label %s " + pinnedLabel + "`), then restart containerd",
			"pkg/cri/store/image/image.go Store.update returns early for a known reference of the same image ID, getImage reads PinnedImageLabelKey " +
				"@v1.6.22, @v1.6.24, @v1.7.3, @v1.7.9 (containerd#9328, reported on 1.7.8)"},
		{Containerd, Range{"1.7.3", "1.7.10"}, "", "the same file @v1.7.3, @v1.7.9; per-reference pins from a2b16d7f9 @v1.7.10"},
	},
}

// pinnedLabel is the label containerd's CRI plugin reads into
// Image.pinned: PinnedImageLabelKey=PinnedImageLabelValue in
// pkg/cri/labels/labels.go @v1.6.22, @v1.7.35 and
// internal/cri/labels/labels.go @v2.4.2.
const pinnedLabel = "io.cri-containerd.pinned=pinned"

const kubeletProtectsRead = "pkg/kubelet/images/image_gc_manager.go detectImages \"Always consider the container runtime pod sandbox image in use\", " +
	"fed from crOptions.PodSandboxImage in pkg/kubelet/kubelet.go @v1.23.0, @v1.28.0; gone @v1.29.0-alpha.1, @v1.29.0-alpha.3, @v1.29.0-rc.0, @v1.29.0, @v1.29.15 (the Go module proxy refuses v1.29.0-alpha.0)"

const containerdNeverPins = "containerd %s never reports Image.pinned (fixed in 1.6.22 and 1.7.3): kubelet 1.29 and later may " +
	"garbage-collect the sandbox image; upgrade containerd or pin it through a CRI shim"

// BuildFix is a fact that a distribution's builds do not share with the
// upstream releases they build: the distribution carries the fix. Build is
// how its builds' suffix starts ("-k3s"); Row.Range the upstream versions
// concerned, Row.Read where the fix was read.
type BuildFix struct {
	Fact  Fact
	Build string
	Row   Row
}

// buildFixes are the only exceptions to "a distribution's build is the
// release it builds".
var buildFixes = []BuildFix{
	{ContainerdSandboxNotFound, "-k3s", Row{Containerd, Range{"2.3.2", "2.3.4"}, "",
		"k3s-io/containerd v2.3.2-k3s2 (module zip from the Go module proxy; the version RKE2 v1.36.3+rke2r1's go.mod pins): " +
			"internal/cri/server/podsandbox/sandbox_run.go Controller.Start looks the image up by its ParseDockerRef form, as upstream does " +
			"from v2.3.4 (containerd#13759); RKE2 v1.36.3+rke2r1 runs v2.3.3-k3s1 (Dockerfile: rancher/hardened-containerd:v2.3.3-k3s1), " +
			"taken to carry it too; the proxy refuses v2.3.3-k3s1, and v2.3.0-k3s*, v2.3.1-k3s* and v2.3.2-k3s1 were not read"}},
}

// Holds reports whether f holds at version v, and returns the note of the
// fact (its first row's Value). A distribution's build holds what its
// upstream release holds, except where buildFixes says it carries a fix.
func (f Fact) Holds(v Version) (note string, ok bool) {
	for _, r := range facts[f] {
		if r.Range.Contains(v) && !fixedInBuild(f, v) {
			return facts[f][0].Value, true
		}
	}
	return "", false
}

// fixedInBuild reports whether v is a distribution's build that carries
// the fix of f.
func fixedInBuild(f Fact, v Version) bool {
	for _, b := range buildFixes {
		if b.Fact == f && v.Build != "" && strings.HasPrefix(v.Build, b.Build) && b.Row.Range.Contains(v) {
			return true
		}
	}
	return false
}

// BuildFixes returns the facts distributions' builds are known not to
// share with their upstream release.
func BuildFixes() []BuildFix { return buildFixes }

// Note returns the note of f, whatever the version.
func (f Fact) Note() string { return facts[f][0].Value }

// Rows returns the rows of f.
func (f Fact) Rows() []Row { return facts[f] }
