package crishim_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxpin/sandboxpin/crishim"
	"github.com/sandboxpin/sandboxpin/pin"
)

// A shim whose caller decides the rules: a Loader in place of resolving
// the node.
func ExampleOptions_loader() {
	rules, err := pin.Compile([]string{"registry.k8s.io/pause:3.10.1"}, pin.WithSource("installer"))
	if err != nil {
		fmt.Println(err)
		return
	}
	o := crishim.Options{
		Listen:          "unix:///run/sandboxpin/shim.sock",
		RuntimeEndpoint: "unix:///run/containerd/containerd.sock",
		Loader:          func(context.Context) (*pin.Matcher, error) { return rules, nil },
		Pins:            []string{"registry.example.com/infra/*"},
	}
	fmt.Println(o.Loader != nil, o.Node == nil)
	// Output:
	// true true
}

// Options that cannot work are errors of New, before anything listens.
func ExampleNew() {
	_, err := crishim.New(context.Background(), crishim.Options{
		Listen:          "shim.sock", // not absolute
		RuntimeEndpoint: "unix:///run/containerd/containerd.sock",
	})
	fmt.Println(errors.Is(err, crishim.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// invalid shim options: Listen: endpoint "shim.sock": want unix:///path or /path
}
