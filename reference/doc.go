// Package reference parses, canonicalizes and compares container image
// references the way a Kubernetes node needs them compared: Docker Hub's
// spellings folded together and, where the caller asks, registry aliases
// (k8s.gcr.io is registry.k8s.io) applied.
//
// Parse a reference once, then compare or print its canonical form:
//
//	r, err := reference.Parse("k8s.gcr.io/pause:3.10")
//	if err != nil {
//		return err // a *reference.ParseError naming the offset
//	}
//	fmt.Println(r) // k8s.gcr.io/pause:3.10
//	aliases := reference.DefaultAliases()
//	fmt.Println(aliases.Equal("k8s.gcr.io/pause:3.10", "registry.k8s.io/pause:3.10"))   // true
//	fmt.Println(reference.Equal("k8s.gcr.io/pause:3.10", "registry.k8s.io/pause:3.10")) // false: no aliases
//
// [Parse] keeps the registry as written, as distribution/reference and
// go-containerregistry do: a name is what its writer wrote, and a tool that
// prints it back (a runtime's config, a pre-pull list) must not rewrite it.
// [Equal] compares what Parse reads: no aliases either. Aliases apply only
// through an [*Aliases]: [Aliases.Parse] rewrites k8s.gcr.io/pause to
// registry.k8s.io/pause and [Aliases.Equal] compares under them; start from
// [DefaultAliases] and add mirrors of your own with [Aliases.With]. Every
// Equal has one meaning, [Ref.Equal] of the Refs parsed: the same name
// (domain case folded) and the same digest when either has one, else the
// same tag.
//
// # Grammar
//
// The grammar is distribution/reference's:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path
//	domain    := host [ ":" port ]            (host: DNS name or [IPv6])
//	path      := component ( "/" component )*
//	component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
//	tag       := [\w][\w.-]{0,127}
//	digest    := sha256, sha384 or sha512 ":" lowercase hex of its length
//
// Every input that distribution/reference.ParseDockerRef accepts, Parse
// accepts too, with the same canonical name, tag and digest, except where
// this package deliberately differs.
//
// # Differences from distribution/reference
//
//   - registry-1.docker.io is docker.io, as index.docker.io is, and the Docker
//     Hub names are recognized in any case (Docker.IO/busybox is
//     docker.io/library/busybox).
//   - Aliases apply where an [*Aliases] parses or compares ([Aliases.Parse],
//     [Aliases.Equal]); [Parse] and [Equal] apply none.
//   - A domain is at most [MaxDomainLength] bytes and an input at most
//     [MaxInputLength]; distribution/reference has no domain limit and spends
//     about half a second on a megabyte-long one.
//   - With a tag and a digest, both are kept (ParseDockerRef drops the tag);
//     the digest alone identifies the image.
//
// # Quirks kept for compatibility
//
// A first component that looks like a domain but is not one, such as
// "a_b.example/x", makes the whole name a path with no domain, as in
// distribution/reference: [Ref.Domain] is "" and [Ref.Name] is "a_b.example/x".
// "sha256:<64 hex>" is the repository docker.io/library/sha256 with a tag;
// callers that may hold an image ID call [ParseImageID] first.
//
// # Concurrency and zero values
//
// [Ref] and [Aliases] are immutable and safe for concurrent use. A nil
// *Aliases has no rules: its methods apply none, as [Parse] and [Equal].
// Where an *Aliases is an input (pin.WithAliases, resolve.Options.Aliases,
// audit through the resolve.Result) nil means not given: the
// [DefaultAliases]; [NoAliases] is the explicit empty set. The zero
// [Ref] is not a reference; no successful parse returns it. It marshals as ""
// and "" unmarshals to it.
package reference
