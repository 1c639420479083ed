// Package pin decides whether a CRI runtime must report Image.Pinned for an
// image, so that the kubelet's image garbage collector leaves it alone.
//
// Build a [Matcher] once from configuration, then call [Matcher.IsPinnedImage]
// (or [Matcher.IsPinned] for one name) from ListImages, ImageStatus and GC
// paths:
//
//	m, err := pin.Compile([]string{"registry.k8s.io/pause:3.10.1"}, pin.WithSource("config.toml"))
//	if err != nil {
//		return err // the bad patterns (the first 10), with their index
//	}
//	img.Pinned = img.Pinned || m.IsPinnedImage(img)
//
// [Compile] documents the pattern language of each [Mode]. [Matcher.Explain]
// says which pattern pinned an image and through which of its names.
//
// # Why
//
// containerd before 1.6.22 and 1.7.3 never sets pinned; containerd 2.x and
// cri-dockerd compare the configured name as a raw string, so
// "k8s.gcr.io/pause:3.10.1" configured does not pin the same image stored as
// "registry.k8s.io/pause:3.10.1"; CRI-O's globs are unanchored and
// case-insensitive. ModeStrict mode compares canonical, alias-aware references
// ([WithAliases]: nil or not given is reference.DefaultAliases, as in every
// sandboxpin package; reference.NoAliases() is none);
// ModeCRIOCompat mode predicts what CRI-O does, and ModeCRIDockerdCompat mode what
// cri-dockerd 0.4.7 and later do with --pinned-images and
// --pinned-image-labels: raw strings against Docker's familiar names, so
// that "docker.io/library/nginx:1.27" pins nothing ([CRIDockerdNeverMatches]
// lists such patterns). Labels are matched only for images that implement
// [Labeled]: the CRI Image message has no labels. Where each runtime's
// behaviour was read or seen: docs/release-facts.md in the repository.
//
// # Speed
//
// Canonical names, which is how containerd and CRI-O store them, are looked
// up in maps built at compile time, alias spellings included; no call
// allocates for them and the cost does not grow with the number of exact
// patterns. Docker's familiar names, as cri-dockerd lists them
// ("nginx:1.27", "team/app@sha256:…"), are in the maps too, and globs and
// keywords see them as "docker.io/library/nginx" without the string being
// built: no allocation either, unless an alias rewrites Docker Hub names.
// Other forms ("library/nginx:1.27", "index.docker.io/…", a mixed-case
// domain) are parsed first.
// An image's tags and digests usually share a name, and globs and keywords
// are tried once per name. A wildcard match is confirmed with a full parse,
// so a malformed name is never pinned by a glob.
// ModeCRIDockerdCompat looks each name up in two maps (whole, and without its
// tag or digest), tries its prefixes in order and the label selectors
// against the image's label map: it never allocates either.
//
// # Concurrency and zero values
//
// A Matcher is immutable: call it from any number of goroutines. A nil
// *Matcher and the zero Matcher pin nothing. [Set] swaps matchers atomically
// for configuration reloads; its zero value holds none.
package pin
