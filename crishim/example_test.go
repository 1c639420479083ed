package crishim_test

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/sandboxpin/sandboxpin/crishim"
)

// The flags of `sandboxpin shim`, on a flag set of one's own.
func ExampleOptions_AddFlags() {
	var o crishim.Options
	fs := flag.NewFlagSet("shim", flag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--listen", "unix:///run/sandboxpin/shim.sock",
		"--runtime-endpoint", "unix:///run/containerd/containerd.sock",
		"--pin", "registry.example.com/infra/*",
		"--metrics-listen", "127.0.0.1:9628",
	})
	fmt.Println(err)
	fmt.Println(o.Listen, o.RuntimeEndpoint, o.Root, o.Pins, o.MetricsListen)
	// Output:
	// <nil>
	// unix:///run/sandboxpin/shim.sock unix:///run/containerd/containerd.sock / [registry.example.com/infra/*] 127.0.0.1:9628
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
	// invalid shim options: --listen: endpoint "shim.sock": want unix:///path or /path
}
