// Package fakecri serves a fake CRI runtime on a unix socket, for the tests
// of code that talks to a runtime through [cri] or fronts one with crishim:
// canned answers to Version, Status, ListImages, ImageStatus and PullImage,
// and builders of hostile answers (a Status Info of many megabytes, a config
// nested far deeper than any parser should follow, a ListImages response of
// an exact size) for tests of what a client does with a runtime that sends
// them.
//
//	rt := &fakecri.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.2.9",
//		Images: fakecri.ImagesOfSize(20 << 20)}
//	c, err := cri.Dial(ctx, "unix://"+fakecri.Serve(t, rt))
//
// A [Runtime] must not be changed once served (its ListImages and verbose
// Status answers are built once); its methods are safe for concurrent use.
// The zero Runtime answers every call with empty responses.
//
// It is part of the criinfo/cri module (and needs nothing that module does
// not) so that the module's own tests, and its importers', need no other
// module of this repository.
//
// [cri]: https://pkg.go.dev/github.com/sandboxpin/sandboxpin/criinfo/cri
package fakecri
