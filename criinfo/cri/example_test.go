package cri_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
)

func ExampleQuery() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := cri.Query(ctx, "unix:///nonexistent/sandboxpin-example.sock")
	switch {
	case errors.Is(err, cri.ErrNoSocket):
		fmt.Println("no runtime listens there")
	case errors.Is(err, cri.ErrNotCRI):
		fmt.Println("not a CRI v1 runtime")
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Println("timed out")
	case err != nil:
		fmt.Println(err)
	}
	fmt.Println(err)
	// Output:
	// no runtime listens there
	// cri: unix:///nonexistent/sandboxpin-example.sock: dial: no CRI socket: /nonexistent/sandboxpin-example.sock does not exist
}

func ExampleDefaultEndpoints() {
	for _, ep := range cri.DefaultEndpoints() {
		fmt.Println(ep)
	}
	// Output:
	// unix:///run/containerd/containerd.sock
	// unix:///var/run/crio/crio.sock
	// unix:///run/cri-dockerd.sock
}
