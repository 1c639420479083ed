package reference_test

import (
	"errors"
	"fmt"

	"github.com/sandboxpin/sandboxpin/reference"
)

func Example() {
	r, err := reference.Parse("k8s.gcr.io/pause:3.10")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r)
	fmt.Println(reference.Equal("busybox", "index.docker.io/library/busybox:latest"))
	fmt.Println(reference.Equal("k8s.gcr.io/pause:3.10", "registry.k8s.io/pause:3.10"))
	fmt.Println(reference.DefaultAliases().Equal("k8s.gcr.io/pause:3.10", "registry.k8s.io/pause:3.10"))
	aliased, _ := reference.DefaultAliases().Parse("k8s.gcr.io/pause:3.10")
	fmt.Println(aliased)
	// Output:
	// k8s.gcr.io/pause:3.10
	// true
	// false
	// true
	// registry.k8s.io/pause:3.10
}

func ExampleParse() {
	for _, s := range []string{"pause", "docker.io/library/pause:3.10", "registry.k8s.io/pause:3.10@sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"} {
		r, err := reference.Parse(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s tag=%q digest=%q familiar=%s\n", r.Name(), r.Tag(), r.Digest(), r.Familiar())
	}
	// Output:
	// docker.io/library/pause tag="latest" digest="" familiar=pause:latest
	// docker.io/library/pause tag="3.10" digest="" familiar=pause:3.10
	// registry.k8s.io/pause tag="3.10" digest="sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa" familiar=registry.k8s.io/pause:3.10@sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa
}

func ExampleParse_error() {
	_, err := reference.Parse("registry.k8s.io/Pause:3.10")
	var pe *reference.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Offset, errors.Is(err, reference.ErrNameContainsUppercase))
	}
	fmt.Println(err)
	// Output:
	// 16 true
	// reference "registry.k8s.io/Pause:3.10": offset 16: repository name must be lowercase: 'P' in path
}

func ExampleParseImageID() {
	id, err := reference.ParseImageID("7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa")
	fmt.Println(id, err)
	_, err = reference.ParseImageID("registry.k8s.io/pause:3.10")
	fmt.Println(errors.Is(err, reference.ErrInvalidImageID))
	// Output:
	// sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa <nil>
	// true
}

func ExampleAliases_Equal() {
	aliases, err := reference.DefaultAliases().With(reference.Alias{From: "mirror.corp:5000/k8s", To: "registry.k8s.io"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(aliases.Equal("mirror.corp:5000/k8s/pause:3.10", "k8s.gcr.io/pause:3.10"))
	fmt.Println(aliases.Equal("mirror.corp:5000/k8sx/pause:3.10", "registry.k8s.io/pause:3.10"))
	fmt.Println(aliases.Equal("pause:3.10", "pause:3.10@sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"))
	// Output:
	// true
	// false
	// false
}

func ExampleAliases_Variants() {
	r, err := reference.Parse("registry.k8s.io/pause:3.10")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range reference.DefaultAliases().Variants(r) {
		fmt.Println(v)
	}
	// Output:
	// gcr.io/google-containers/pause:3.10
	// gcr.io/google_containers/pause:3.10
	// k8s.gcr.io/pause:3.10
}
