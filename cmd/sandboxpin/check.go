package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// nameImage is an image known by one name: a repo tag, a repo digest or an ID.
type nameImage struct{ id, tag, digest string }

func (i nameImage) GetId() string { return i.id } //nolint:revive // the cri-api getter name
func (i nameImage) GetRepoTags() []string {
	if i.tag == "" {
		return nil
	}
	return []string{i.tag}
}

func (i nameImage) GetRepoDigests() []string {
	if i.digest == "" {
		return nil
	}
	return []string{i.digest}
}

// imageNamed classifies s as an image ID, a repo digest or a repo tag.
func imageNamed(s string) (nameImage, error) {
	if _, err := reference.ParseImageID(s); err == nil {
		return nameImage{id: s}, nil
	}
	r, err := reference.Parse(s)
	if err != nil {
		return nameImage{}, err
	}
	if r.Digest() != "" {
		return nameImage{digest: s}, nil
	}
	return nameImage{tag: s}, nil
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var pins []string
	fs.Func("pin", "a pin pattern (repeatable): a reference, a digest or image ID, \"prefix*\" or \"*keyword*\"",
		func(p string) error { pins = append(pins, p); return nil })
	useResolve := fs.Bool("resolve", false, "also pin what resolving the node finds (the default when no --pin is given)")
	var n nodeFlags
	n.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin check [--pin PATTERN]... [--resolve] [--root DIR] IMAGE...")
		fmt.Fprintln(fs.Output(), "\nWhether each IMAGE (a reference, a repo digest or an image ID) is pinned, and by which rule. Exit 0 when every IMAGE is pinned, 1 when one is not, 2 on error.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitError
	}
	images := make([]nameImage, fs.NArg())
	for i, s := range fs.Args() {
		img, err := imageNamed(s)
		if err != nil {
			return fail(stderr, "check: %v", err)
		}
		images[i] = img
	}

	var res *resolve.Result // nil: the --pin patterns alone
	if *useResolve || len(pins) == 0 {
		client, err := n.dial(ctx)
		if err != nil {
			return fail(stderr, "check: %v", err)
		}
		if client != nil {
			defer client.Close()
		}
		if res, err = n.resolve(ctx, client); err != nil {
			return fail(stderr, "check: %v", err)
		}
	}
	m, err := res.Matcher(pins...)
	if err != nil {
		return fail(stderr, "check: %v", err)
	}

	code := exitOK
	for i, img := range images {
		got, ok := m.Explain(img)
		if !ok {
			fmt.Fprintf(stdout, "%s: not pinned\n", fs.Arg(i))
			code = exitCheck
			continue
		}
		fmt.Fprintf(stdout, "%s: pinned by %q (%s, %s)\n", fs.Arg(i), got.Pattern, got.Kind, got.Source)
	}
	return code
}
