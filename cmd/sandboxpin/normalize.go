package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/reference"
)

func newNormalizeCmd() *cobra.Command {
	var familiar bool
	c := &cobra.Command{
		Use:   "normalize [flags] REF...",
		Short: "The canonical form of image references",
		Long: "The canonical, fully qualified form of each reference, one a line, with the default registry aliases\n" +
			"applied (k8s.gcr.io is registry.k8s.io). An image ID is not a reference: it is refused. Exit 2 if one\n" +
			"does not parse.",
		Example: "  sandboxpin normalize k8s.gcr.io/pause:3.9 busybox\n  sandboxpin normalize --familiar docker.io/library/busybox",
		Args:    minArgs("REF"),
	}
	c.Flags().BoolVar(&familiar, "familiar", false, "print the short form docker prints instead")
	out := addOutput(c, "text", "json", "yaml")
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := out.check(); err != nil {
			return err
		}
		type normalized struct {
			Input     string `json:"input"`
			Canonical string `json:"canonical,omitempty"`
			Familiar  string `json:"familiar,omitempty"`
			Error     string `json:"error,omitempty"`
		}
		norm := reference.DefaultAliases()
		var refs []normalized
		var errs []error
		for _, s := range args {
			n := normalized{Input: s}
			if _, err := reference.ParseImageID(s); err == nil {
				err := fmt.Errorf("%q is an image ID, not a reference: an ID names one image's content and has no canonical name", s)
				n.Error, errs = err.Error(), append(errs, err)
			} else if r, err := norm.Parse(s); err != nil {
				n.Error, errs = err.Error(), append(errs, err)
			} else {
				n.Canonical, n.Familiar = r.String(), r.Familiar()
			}
			refs = append(refs, n)
		}
		w := c.OutOrStdout()
		err := out.print(w, refs, func() {
			for _, n := range refs {
				switch {
				case n.Error != "":
				case familiar:
					fmt.Fprintln(w, n.Familiar)
				default:
					fmt.Fprintln(w, n.Canonical)
				}
			}
		})
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return fail(exitError, "%w", errors.Join(errs...))
		}
		return nil
	}
	return c
}
