package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/sandboxpin/sandboxpin/reference"
)

func runNormalize(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("normalize", flag.ContinueOnError)
	familiar := fs.Bool("familiar", false, "print the short form docker prints instead")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin normalize [--familiar] REF...")
		fmt.Fprintln(fs.Output(), "\nThe canonical, fully qualified form of each reference, one a line, with the default registry aliases (k8s.gcr.io is registry.k8s.io). Exit 2 if one does not parse.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitError
	}
	code := exitOK
	for _, s := range fs.Args() {
		r, err := reference.NewNormalizer(reference.DefaultAliases()).Parse(s)
		if err != nil {
			code = fail(stderr, "normalize: %v", err)
			continue
		}
		if *familiar {
			fmt.Fprintln(stdout, r.Familiar())
		} else {
			fmt.Fprintln(stdout, r)
		}
	}
	return code
}
