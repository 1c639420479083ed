// Package resolve tells which sandbox ("pause") image a Kubernetes node's
// container runtime really uses, from every source that names one, with
// provenance, conflicts, the patterns to pin it with and a pre-pull list.
//
// Call [Resolve] with the node's root file system (nil means "/"; for a
// node image or a mounted disk use [DirFS], which confines every path and
// symbolic link to it like a chroot) and whatever else is known:
//
//	res, err := resolve.Resolve(ctx, resolve.Options{
//		Live:           client,    // optional: a criinfo/cri client
//		KubeadmVersion: "v1.31.2", // optional: the kubeadm that installs the node
//		KubeletVersion: "v1.31.2", // optional
//	})
//	// res.SandboxImage, res.Conflicts, res.Pins (in res.PinMode), res.Prepull
//
// Resolve only reads: files under Options.Root and one Info call on
// Options.Live. It keeps no state and is safe for concurrent use. The zero
// [Options] reads the host's own root, "/", as the node (what an agent on
// the node wants, and never what a tool reading a node image wants: pass
// [DirFS] of the image) and asks no socket. A [DirFS] root that is not
// there is an error wrapping [ErrNoRoot]. A node whose sandbox image cannot
// be told is an error wrapping [ErrNoSandboxImage], returned with the
// partial [Result] (its notes say what is missing): never a Result whose
// empty SandboxImage a caller could overlook.
//
// Every release fact (defaults, pinning behaviour per version, kubeadm's
// pause table) is a row of resolve/internal/releases that names the
// upstream file and tag, or the live test, it was read from; the
// repository's docs/release-facts.md lists them all, and the upstream
// history behind this documentation. docs/design.md shows how a node
// flows through the package.
//
// # Sources
//
// Paths are relative to Options.Root. A missing file is an absent source; a
// malformed one is a [*ConfigError] naming the file, line and key, wrapping
// [ErrInvalidConfig].
//
//   - the runtime's command line: what systemd runs for its unit
//     (containerd.service, crio.service, cri-docker.service, k3s.service or
//     k3s-agent.service, rke2-server.service or rke2-agent.service): the unit
//     file first found in /etc, /run, /usr/local/lib, /lib and /usr/lib
//     systemd/system, its UNIT.d/*.conf drop-ins from all of them by file
//     name (a name in a higher directory masks the same name in a lower one),
//     the last ExecStart= after an empty one resets, Environment= and then
//     EnvironmentFile= assignments ("-" prefix: optional) expanded as systemd
//     expands $NAME (split into words) and ${NAME} (in place). containerd's
//     --config (-c) names the file read instead of /etc/containerd/config.toml;
//     CRI-O's --config, --config-dir and --pause-image (or CONTAINER_CONFIG,
//     CONTAINER_CONFIG_DIR, CONTAINER_PAUSE_IMAGE in the unit's environment,
//     such as /etc/sysconfig/crio) replace its main file, its drop-in
//     directory and every file's pause_image; k3s's and RKE2's --pause-image
//     (else the pause-image key of /etc/rancher/{k3s,rke2}/config.yaml, or of
//     the file $K3S_CONFIG_FILE, $RKE2_CONFIG_FILE or --config names, then of
//     its .d directory's *.yaml and *.yml files by name) is what they write
//     into their containerd config at their next start (a config that
//     differs says they were not restarted). Result.RuntimeCommand
//     says which of these the command line sets, and where.
//   - containerd ([SourceContainerdConfig]): /etc/containerd/config.toml (or
//     what --config names), or the
//     configs k3s and RKE2 generate under
//     /var/lib/rancher/{k3s,rke2}/agent/etc/containerd/config.toml (preferred
//     when present: their kubelet uses that containerd). Version 1 reads
//     [plugins.cri] sandbox_image, version 2 [plugins."io.containerd.grpc.v1.cri"]
//     sandbox_image, versions 3 and 4 [plugins."io.containerd.cri.v1.images".pinned_images],
//     an open map whose "sandbox" entry is the pause image and whose every
//     value is pinned. imports are followed as containerd 2.x does: breadth
//     first, each file once, relative paths relative to the importing file, a
//     path with "*" a sorted glob, any other path required to exist; a later
//     file overrides non-empty scalars and merges tables by key. What a file's version means depends on the containerd that reads it.
//     containerd 1.x reads versions 1 and 2; 2.0–2.2 read 1–3 and 2.3 and
//     later (from 2.3.0-rc.0) 1–4. On 2.0–2.2
//     an imported file of a lower version is migrated (its sandbox_image
//     becomes pinned_images.sandbox), a higher one stops containerd, and a
//     sandbox_image under the version 2 table of a version 3 file is ignored.
//     On 2.3 and later every file below version 4 is migrated to 4 on its
//     own, and the CRI plugin's migration now also runs for version 3, so
//     that same sandbox_image becomes pinned_images.sandbox and overrides
//     the file's own pinned_images.sandbox (2.2.9 ignores it). In a version
//     4 file the key is ignored again. Where each of these was read and
//     seen: docs/release-facts.md, "Upstream history".
//     Resolve reads a version 4 main file as 2.3 and later do, a version 1–3
//     one as 2.0–2.2 do, and again as 2.3 does when the containerd version
//     (live or Options.RuntimeVersion) is 2.3.0-rc.0 or later; a key whose
//     meaning depends on that version is a one-sided [Conflict] that says so.
//     The gRPC socket is [grpc] address in versions 1–3 and
//     [plugins."io.containerd.server.v1.grpc"] address in version 4, which
//     ignores [grpc] ([ContainerdEndpoint]). disabled_plugins = ["cri"]
//     (Docker's packaged config) means that containerd serves no pods.
//   - CRI-O ([SourceCRIOConfig]): /etc/crio/crio.conf, then every file under
//     /etc/crio/crio.conf.d/ recursively in lexical order; keys merge, arrays
//     replace. [crio.image] pause_image is the sandbox image, pinned_images
//     the pin patterns (a lone "*", which makes CRI-O panic, is reported).
//     Since 1.28.0 CRI-O also pins pause_image, as an exact pattern: a
//     case-insensitive compare with each whole stored name, so a short,
//     tagless or alias spelling pins nothing, an uppercase host still pins,
//     and an uppercase path makes CRI-O refuse to start; notes say which
//     applies (CRI-O before 1.28.0 pins nothing, 1.28.x only an image's first
//     name). Pins then holds pause_image and pinned_images as written, for
//     [pin.ModeCRIOCompat].
//   - cri-dockerd ([SourceCRIDockerdFlags]): --pod-infra-container-image on
//     the command line of cri-docker.service (above; backslash continuations,
//     quotes and escapes as systemd reads them: package unitfile).
//   - kubelet ([SourceKubeletFlags]): KUBELET_KUBEADM_ARGS in
//     /var/lib/kubelet/kubeadm-flags.env, then KUBELET_EXTRA_ARGS in
//     /etc/default/kubelet and /etc/sysconfig/kubelet (systemd
//     EnvironmentFile syntax; Go-quoted values read back). Flags are
//     --name=value or --name value; the last one wins. Its
//     --container-runtime-endpoint tells which runtime the kubelet uses.
//   - kubeadm ([SourceKubeadmConfig], [SourceKubeadmDefault]): Options.KubeadmConfigPath,
//     a YAML file of one or more documents whose ClusterConfiguration
//     (kubeadm.k8s.io/v1beta3, v1beta4 or v1, the API of kubeadm 1.37, all
//     with a top-level imageRepository) gives imageRepository (and
//     kubernetesVersion, used with a note when Options.KubeadmVersion is
//     empty), and [KubeadmPauseImage] for the kubeadm version.
//   - the live runtime ([SourceRuntimeInfo]): Options.Live's report, when it has one
//     (containerd 1.x, CRI-O and cri-dockerd 0.3.2 and later do; containerd 2.x
//     does not: seen on 2.2.9, 2.3.7 and 2.4.2). Its RuntimeVersion selects
//     the built-in default, except for cri-dockerd, whose Version RPC reports
//     the Docker Engine's version: cri-dockerd's own comes only from
//     Options.RuntimeVersion, and is otherwise unknown (a note says so).
//   - the built-in default ([SourceRuntimeDefault]): [RuntimeDefaultImage] for the
//     runtime and its version (see Versions).
//
// # Versions
//
// The runtime's version picks its built-in default, the rules for its
// config file and the pinning notes; the kubelet's decides what its
// --pod-infra-container-image does; kubeadm's gives its pause image. Each
// is taken from the first of these that states it, and
// [Result.Versions] lists every statement found ([ComponentVersion], with
// its Origin):
//
//  1. the live runtime's Version RPC (Options.Live), except for
//     cri-dockerd, whose RPC reports the Docker Engine's version;
//  2. Options.RuntimeVersion, Options.KubeletVersion, Options.KubeadmVersion;
//  3. the Go build info of the component's binary (as `go version -m` shows
//     it), read from the file and never run: the path the cri-dockerd
//     unit's ExecStart names (on a node whose containerd config RKE2
//     generates, /var/lib/rancher/rke2/bin for containerd and the
//     kubelet), then /usr/local/bin, /usr/bin and /opt/bin
//     (the order of systemd's default PATH) with the names containerd,
//     crio, cri-dockerd, kubelet and kubeadm. The version is the main
//     module's ("github.com/containerd/containerd/v2 v2.4.2",
//     "k8s.io/kubernetes v1.37.2") when the binary is built from the
//     component's module, else the value the recorded -ldflags give one of
//     its version variables with -X (containerd's version.Version,
//     cri-dockerd's cmd/version.Version, Kubernetes' gitVersion). A
//     pseudo-version or "(devel)" is no version; a binary built from
//     another module, a file that is no Go executable and a binary that
//     states no version (Debian's containerd is built outside module mode)
//     are notes;
//  4. the dpkg package database, /var/lib/dpkg/status: the installed (or
//     held) packages containerd (Debian, Ubuntu), containerd.io (Docker's
//     repository), cri-o, cri-dockerd, kubelet and kubeadm. The Debian
//     version's upstream part is used ("1.6.20~ds1-1+deb12u3" is 1.6.20). A
//     malformed database is a [*ConfigError] with its line; one larger than
//     4 MiB is a note. RPM databases are not read.
//
// Every statement is read one way: "-alpha.N", "-beta.N" and "-rc.N"
// (also "-rc1", Debian's "~rc1") are pre-releases; any other suffix is a
// distribution's build of the release it names ("v2.3.4-k3s1" and
// "v2.3.4-k3s1.36" are containerd 2.3.4, "v1.36.3+rke2r1" is 1.36.3,
// "1.7.28-0ubuntu1" is 1.7.28). Each release fact says how it treats the
// pre-releases of the release where it starts (docs/release-facts.md).
//
// Where two statements name different versions, a note says which was
// used and what the difference means (a packaged binary replaced by
// another, a version given that is not the node's). When the kubeadm
// version is known from none of them, the kubeadm config's
// kubernetesVersion is used, with a note.
//
// # Authority
//
// The runtime is Options.Runtime, else the live runtime's, else the one the
// kubelet's --container-runtime-endpoint or kubeadm's criSocket names, else
// the only one configured (containerd, then CRI-O, then cri-dockerd when
// several are, which is a [Conflict]). Its sandbox image is what it reports
// live, else what its config files say, else its built-in default.
// Result.SandboxImage is that string exactly as its source states it, never
// alias-rewritten. The kubelet flag and kubeadm's expectation are compared
// with it and never override it.
//
// # Conflicts and notes
//
// Images are compared alias- and digest-aware with reference.Aliases.Equal
// (Options.Aliases: nil is reference.DefaultAliases, as in every package
// here, and reference.NoAliases() none): "k8s.gcr.io/pause:3.9"
// against "registry.k8s.io/pause:3.9", or a tag against the same tag with a
// digest, is a note; different images are a [Conflict] whose Message says
// which file and key to change. The kubelet flag is a conflict when it
// differs below kubelet 1.29 (or an unknown version), a note from 1.29 (the
// kubelet no longer protects the image), and a conflict in any case from
// 1.35, which rejects the flag. With Options.KubeletVersion known, notes
// also say that a kubelet before 1.23.0 ignores Image.pinned, and that
// kubelets 1.23 to 1.28 keep their own built-in default sandbox image out
// of image GC even without the flag (1.23: pause:3.6, k8s.gcr.io before
// 1.23.15; 1.24: pause:3.7, k8s.gcr.io before 1.24.9; 1.25: pause:3.8;
// 1.26–1.28: registry.k8s.io/pause:3.9), which protects the runtime's image
// only when it is that one. Configuration mistakes with one side (an
// ignored key, a missing import, an invalid reference) are conflicts with a
// zero B.
//
// # Fixes
//
// Each finding that a change answers has a [Fix] in Result.Fixes, as data
// (the file, line and key to edit or remove, or an action), with its
// [Urgency]: [UrgencyStops] when the node runs no pods as configured (the
// kubelet or the runtime does not start, or starts no pod sandbox),
// [UrgencyUnprotected] when the sandbox image is left unprotected from
// image GC or missing offline, [UrgencyOther] for the rest. Fixes go most
// urgent first, in the order found within an urgency; Result.Fix is the
// first. Package audit merges them with its own, from the runtime's images.
//
// # JSON
//
// A Result marshals to JSON with every field it holds, the aliases it was
// compared with included (Result.AliasRules, key "aliases", omitted for the
// defaults, [] for none), so that a Result read back from `sandboxpin resolve -o json`
// gives the same Matcher and the same audit verdict as the one Resolve
// returned.
//
// # Pinning by the runtime itself
//
// With the runtime's version known, notes say when the runtime will not set
// Image.pinned on its sandbox image (rows in resolve/internal/releases, facts.go):
//
//	containerd <1.6.22, 1.7.0–1.7.2   never
//	containerd 1.6.22–1.6.28,          only images its CRI plugin pulls: not one
//	           1.7.3–1.7.13            imported or pulled outside CRI (ctr images import)
//	containerd 1.x                     compares after Docker normalization (short and
//	                                   tagless names pin); never an alias spelling;
//	                                   name:tag@digest only under name@digest
//	containerd 2.x                     exact strings: never an alias, short or tagless
//	                                   spelling of the stored name, never name:tag@digest
//	cri-dockerd <0.3.10                never
//	cri-dockerd ≥0.3.10                exact strings against Docker's RepoTags, which are
//	                                   familiar names (rancher/mirrored-pause:3.6) without digest
//	cri-dockerd ≥0.4.7                 also what --pinned-images and --pinned-image-labels
//	                                   name (cri-dockerd#571; pin.ModeCRIDockerdCompat)
//
// # Pins and pre-pull
//
// Result.Pins is the sandbox image followed by the runtime's own pinned
// images (containerd version 3 pinned_images values, CRI-O pinned_images,
// cri-dockerd's --pinned-images entries), to compile a pin.Matcher from in
// Result.PinMode: pin.ModeCRIOCompat for CRI-O (its patterns are not
// references), pin.ModeCRIDockerdCompat for cri-dockerd 0.4.7 and later (with
// Result.PinLabels; [Result.RuntimeMatcher] compiles them as cri-dockerd
// reads them), pin.ModeStrict otherwise. Result.Prepull is
// every exact string a consumer on the node looks up: the runtime's sandbox
// image as configured, kubeadm's pause image as kubeadm names it (which
// kubeadm init and join pull, and kubeadm upgrade runs as a Job's container
// from 1.18: a note of kind KindKubeadmUpgradeRunsPause says so where it is
// not the runtime's spelling), and the
// runtime's exact pinned images (containerd pinned_images values, CRI-O
// pinned_images without a "*", cri-dockerd's --pinned-images entries with a
// tag or digest that can match). Each is looked up by exact name (kubeadm's
// pre-flight and pull, containerd 1.x and 2.x, CRI-O and cri-dockerd compare
// strings, not images), so two spellings of one image are both listed and
// only identical strings are merged; each such pair gets a note starting
// "pre-pull: " that says how to pull the image once and store it under both
// names (ctr -n k8s.io images tag, skopeo copy, docker tag).
//
// # End of life
//
// A component whose release line upstream no longer supports gets a note of
// kind KindEndOfLife naming the day its support ended and the file that
// says so: containerd from its RELEASES.md, the kubelet
// and kubeadm outside the three newest Kubernetes minors. The day judged is
// Options.Today, or when it is zero the day the table was read, which
// Result.SupportAsOf records: Resolve reads no clock, so its answer is the
// same on every run, and a newer sandboxpin knows newer releases.
//
// # A node root is hostile input
//
// Installers resolve node images they did not build, so Resolve treats the
// root as hostile. Through [DirFS], nothing outside the root is ever opened:
// absolute links, ".." chains and links in intermediate directories resolve
// inside it, and link loops are errors. With any root, only regular files
// are read: FIFOs, sockets and devices (also behind a link) are refused by
// their mode before an open that could block, with a [*ConfigError] that
// wraps [ErrNotRegular] and says what the file is. Every read is bounded by
// the reader, whatever Stat claims, and each Resolve call stops with a
// [*ConfigError] wrapping [ErrLimit], naming the file or directory, when a
// source passes one of these limits:
//
//   - 4 MiB per file;
//   - 16 MiB in all the files of one Resolve call;
//   - 256 files read per source (containerd's config with its imports, the
//     CRI-O config with its drop-ins, the cri-dockerd unit with its drop-ins,
//     the kubelet flag files, the kubeadm config); containerd's imports are
//     also bounded at 256 files per config;
//   - 4096 directory entries listed per source (imports globs, crio.conf.d,
//     systemd drop-in directories), listed in chunks so that a directory of
//     100,000 files costs no more;
//   - paths of at most 32 components ("etc/crio/crio.conf.d/a" has 4), which
//     bounds the depth of the crio.conf.d walk.
//
// Parsing is bounded too, while it reads, before any recursion, so that no
// file within the byte limits can exhaust the stack or the memory, or take
// more than linear time. Each TOML file is decoded by the decoder of the
// runtime that reads it (containerd 2.x: go-toml v2; CRI-O:
// BurntSushi/toml), after a lexical pre-scan that skips strings and
// comments and allows:
//
//   - at most 64 brackets and key parts open at once;
//   - at most 4096 tables and keys per file, and 16,384 over the files of
//     one source: go-toml's decoder takes time quadratic in their number
//     (about 0.1 s for 4096). The defaults of containerd and CRI-O have
//     about a hundred tables.
//
// Resolve checks its context before every file and directory it opens; a
// cancelled Resolve returns the context's error, not a [*ConfigError]. Error
// texts keep at most 240 bytes of a cause (which may quote the file's
// content): the start and the end, with the number of bytes left out.
//
// # Limits
//
//   - A TOML file that its runtime's decoder refuses is refused, with its
//     line, and one it accepts is accepted (containerd 1.x's go-toml v1 is
//     not modelled: its files are judged by go-toml v2). Lines of TOML keys
//     come from the pre-scan's index; a key inside an array of inline
//     tables has the line of the array's key; a kubelet flag's line is the
//     line of its variable's assignment.
//   - A runtime started with a config file elsewhere (containerd --config,
//     crio --config) is not followed; a live report reveals the difference.
//   - Environment variables in cri-dockerd's ExecStart are not expanded (a
//     note says so).
//   - [RuntimeDefaultImage]'s rows were read at the upstream tags that
//     docs/release-facts.md names beside them; patch releases between two
//     read tags are assumed to match them.
//   - A kubeadm config (YAML) is bounded before sigs.k8s.io/yaml (kubeadm's
//     decoder) decodes it: each document is parsed into a node tree, which
//     expands no alias, and per file at most 100 levels of nesting
//     (aliases expanded), 50,000 nodes after alias expansion, 1 MiB
//     repeated by aliases, 1000 anchors and aliases and 1000 non-empty
//     documents are allowed (package resolve/internal/yamlfile). kubeadm
//     writes about five levels, 600 nodes, no anchors and five documents.
//     Key lines come from the node tree. A document with an alias that the
//     tree's parser (go-yaml v3) refuses and go-yaml v2 reads is refused.
//   - Binaries are read like configs (the root's confinement, regular files
//     only), through [io.ReaderAt] when the file system's files offer it
//     (DirFS's and fstest.MapFS's do; on others the build info is not
//     read, with a note), at most 8 MiB each: debug/buildinfo reads the
//     headers and the .go.buildinfo section, about 30 KiB of a 56 MB
//     containerd. A file that is no Go executable, or that the reader
//     fails on, is a note that names it. Binaries do not count against the
//     16 MiB of the node's files.
//   - the runtimes' units and the kubelet's environment files are read in
//     linear time, with at most 4096 words in one ExecStart or flags
//     variable (and in the command line a unit's environment expands to),
//     256 ExecStart= lines and 64 EnvironmentFile= lines in a unit with its
//     drop-ins, and 1024 variables in one environment file (or in a unit's
//     whole environment).
package resolve
