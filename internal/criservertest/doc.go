// Package criservertest serves fake CRI runtimes to tests: canned answers to
// Version, Status, ListImages and ImageStatus on a unix socket, and builders
// of hostile answers (a Status Info of many megabytes, a config nested far
// deeper than any parser should follow, a ListImages response of an exact
// size) for the tests that check what sandboxpin does with a runtime that
// answers them.
//
//	rt := &criservertest.Runtime{RuntimeName: "containerd", RuntimeVersion: "v2.2.9",
//		Images: criservertest.ImagesOfSize(20 << 20)}
//	endpoint := "unix://" + criservertest.Serve(t, rt)
//
// A [Runtime] must not be changed once served (its ListImages and verbose
// Status answers are built once); its methods are safe for concurrent use. The zero Runtime answers every call with empty responses.
package criservertest
