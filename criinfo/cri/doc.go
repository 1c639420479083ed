// Package cri asks a CRI runtime over its socket what it reports about itself
// and its images.
//
//	info, err := cri.Query(ctx, "unix:///run/containerd/containerd.sock")
//	if err != nil {
//		return err // errors.Is(err, cri.ErrNoSocket), cri.ErrNotCRI, context.DeadlineExceeded
//	}
//	fmt.Println(info.Runtime, info.RuntimeVersion, info.SandboxImage)
//
// [Client.Info] calls Version and Status{Verbose: true} and parses the Info map
// with [criinfo.Parse]. Runtime and RuntimeVersion come from the Version RPC:
// RuntimeName "containerd" and "cri-o" keep their names, "docker" means
// cri-dockerd, whose RuntimeVersion is Docker Engine's: it goes to
// EngineVersion, and RuntimeVersion stays "" (cri-dockerd states its own
// version only in its binary: `cri-dockerd --version`, or the -ldflags in its
// Go build info, which resolve reads). [MarkPinned] sets Image.Pinned from a [pin.Matcher] on the
// images a runtime listed, for runtimes that pin too little (containerd < 1.6.22
// and < 1.7.3 never pin; 2.x compares raw strings).
//
// Timeouts come from the context. Every error is a [*Error] naming the endpoint
// and the RPC; errors.Is tells apart [ErrNoSocket] (nothing listens there),
// [ErrNotCRI] (something listens but does not serve CRI v1), and
// [context.DeadlineExceeded] (the deadline passed).
//
// This package imports gRPC and k8s.io/cri-api; the parser in
// [github.com/sandboxpin/sandboxpin/criinfo] does not. It is a module of its
// own (github.com/sandboxpin/sandboxpin/criinfo/cri), so that importers of the
// pure packages never see those requirements; it requires cri-api v0.34.10 and
// the gRPC that version needs, nothing newer. A [*Client] is safe for
// concurrent use.
package cri
