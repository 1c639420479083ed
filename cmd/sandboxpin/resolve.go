package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/criinfo"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func newResolveCmd(ctx context.Context) *cobra.Command {
	var n nodeFlags
	c := &cobra.Command{
		Use:   "resolve",
		Short: "The sandbox image this node really uses, every source of it, conflicts, the fix and pins",
		Long: "The sandbox image the runtime really uses, first; then the one recommended fix, which versions are\n" +
			"known, every candidate with its source and origin, conflicts, notes, pins and the pre-pull list.\n" +
			"With no flags it reads the real node (/) and asks the default CRI sockets that exist.\n\n" + exitCodesHelp,
		Example: "  sandboxpin resolve --root /mnt/node-image --kubeadm-version v1.34.1\n  sandboxpin resolve -o yaml",
		Args:    noArgs,
	}
	n.register(c.Flags(), true)
	out := addOutput(c, "text", "json", "yaml")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		res, err := n.resolveNode(ctx)
		if err != nil {
			return err
		}
		w := c.OutOrStdout()
		if err := out.print(w, res, func() { printResult(w, res) }); err != nil {
			return err
		}
		return n.unknown(res)
	}
	return c
}

// resolveNode dials the runtime the flags name, if any, and resolves.
func (n *nodeFlags) resolveNode(ctx context.Context) (*resolve.Result, error) {
	client, err := n.dial(ctx)
	if err != nil {
		return nil, fail(exitError, "%v", err)
	}
	if client != nil {
		defer client.Close()
	}
	res, err := n.resolve(ctx, client)
	if err != nil {
		return nil, fail(exitError, "%v", err)
	}
	return res, nil
}

// unknown is the exitUnknown error when res names no sandbox image, in
// the command line's words: what was missing and which flag would tell.
func (n *nodeFlags) unknown(res *resolve.Result) error {
	if res.SandboxImage != "" {
		return nil
	}
	where := "/"
	if n.root != "" {
		where = n.root
	}
	if !res.Runtime.Known() {
		return fail(exitUnknown, "cannot tell the sandbox image: no container runtime found under %s "+
			"(no config file of containerd, CRI-O or cri-dockerd) and no runtime socket asked; give --runtime-endpoint", where)
	}
	return fail(exitUnknown, "cannot tell %s's sandbox image: no config file under %s sets it and %s's version is unknown; "+
		"give --runtime-version or --runtime-endpoint", res.Runtime, where, res.Runtime)
}

// printResult writes resolve's text: the answer first, then the one fix,
// then how it was found.
func printResult(w io.Writer, res *resolve.Result) {
	runtime := string(res.Runtime)
	if !res.Runtime.Known() {
		runtime = "no runtime found"
	}
	if res.SandboxImage == "" {
		fmt.Fprintf(w, "Sandbox image: cannot be told (%s)\n", runtime)
	} else {
		fmt.Fprintf(w, "Sandbox image: %s (%s)\n", res.SandboxImage, runtime)
	}
	if f := res.Fix; f != nil {
		fmt.Fprintf(w, "Fix: %s\n", f.Message)
	}
	fmt.Fprintf(w, "Versions: %s\n", versionsLine(res))

	fmt.Fprintln(w, "\nCandidates:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  IMAGE\tSOURCE\tROLE\tORIGIN")
	for _, c := range res.Candidates {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Image, c.Source, c.Role, c.Origin)
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\nConflicts: %d\n", len(res.Conflicts))
	for _, c := range res.Conflicts {
		fmt.Fprintf(w, "  ! %s\n", c.Message)
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range res.Notes {
			fmt.Fprintf(w, "  - %s\n", n.Message)
		}
	}
	how := "strict: compared as canonical references, registry aliases applied"
	switch res.PinMode {
	case pin.ModeCRIOCompat:
		how = "as CRI-O compares them: raw strings up to case, x* anywhere in the name"
	case pin.ModeCRIDockerdCompat:
		how = "as cri-dockerd compares them: the sandbox image, then --pinned-images, raw strings against the names `docker images` shows"
	}
	fmt.Fprintf(w, "\nPins (%s): %s\n", how, orNone(res.Pins))
	if len(res.PinLabels) > 0 {
		fmt.Fprintf(w, "Pinned image labels (--pinned-image-labels): %s\n", orNone(res.PinLabels))
	}
	fmt.Fprintf(w, "Pre-pull: %s\n", orNone(res.Prepull))
}

// versionFlags are the flags that give each component's version.
var versionFlags = map[string]string{
	"kubelet": "--kubelet-version",
	"kubeadm": "--kubeadm-version",
}

// versionsLine says which version of the runtime, the kubelet and kubeadm
// was used and from where, and for each unknown one the flag that gives it.
func versionsLine(res *resolve.Result) string {
	var parts []string
	for _, comp := range []string{string(res.Runtime), "kubelet", "kubeadm"} {
		if comp == string(criinfo.RuntimeUnknown) || comp == "" {
			continue
		}
		part := comp + " unknown (give " + cmp.Or(versionFlags[comp], "--runtime-version or --runtime-endpoint") + ")"
		for _, v := range res.Versions {
			if v.Used && string(v.Component) == comp {
				part = comp + " " + v.Version + " (" + v.Origin
				if v.Assumed {
					part += ", assumed"
				}
				part += ")"
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func newPrepullCmd(ctx context.Context) *cobra.Command {
	var n nodeFlags
	c := &cobra.Command{
		Use:   "prepull",
		Short: "The images an installer must pre-pull for this node",
		Long: "The images an installer must pre-pull for this node to start pods offline, one a line: every exact\n" +
			"name a consumer looks up (the runtime's sandbox image as configured, kubeadm's pause image as\n" +
			"kubeadm names it, the runtime's exact pinned images). Two spellings of one image are both listed;\n" +
			"a note on stderr says how to pull once and store it under both names.\n\n" + exitCodesHelp,
		Example: "  sandboxpin prepull --root /mnt/node-image --kubeadm-version v1.34.1 | xargs -n1 crictl pull",
		Args:    noArgs,
	}
	n.register(c.Flags(), true)
	out := addOutput(c, "text", "json", "yaml")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		res, err := n.resolveNode(ctx)
		if err != nil {
			return err
		}
		var notes []resolve.Note
		for _, n := range res.Notes {
			if n.Kind == resolve.KindPrepullTwoNames {
				notes = append(notes, n)
			}
		}
		data := struct {
			Prepull []string       `json:"prepull"`
			Notes   []resolve.Note `json:"notes"`
		}{res.Prepull, append([]resolve.Note{}, notes...)}
		err = out.print(c.OutOrStdout(), data, func() {
			for _, p := range res.Prepull {
				fmt.Fprintln(c.OutOrStdout(), p)
			}
			for _, n := range notes {
				fmt.Fprintf(c.ErrOrStderr(), "note: %s\n", n.Message)
			}
		})
		if err != nil {
			return err
		}
		return n.unknown(res)
	}
	return c
}
