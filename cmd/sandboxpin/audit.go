package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/resolve"
)

func newAuditCmd(ctx context.Context) *cobra.Command {
	var n nodeFlags
	c := &cobra.Command{
		Use:   "audit",
		Short: "The node's verdict: the runtime's images, its own pinned flag beside sandboxpin's rules",
		Long: "Lists the runtime's images with its own pinned flag beside the rule that should pin each, looks the\n" +
			"sandbox image up alias-aware, and gives the verdict and the one fix. Live, it asks the runtime's socket;\n" +
			"offline, --images reads what `crictl images -o json` printed on the node, beside --root.\n\n" +
			"Formats: text; json and yaml (the verdict as data); prometheus (the text exposition, for\n" +
			"node_exporter's textfile collector); summary (the verdict in one line, for node-problem-detector).\n\n" +
			"Exit 0 when the sandbox image is stored as configured and the runtime pins it, 1 when the node will\n" +
			"not start (such as kubelet 1.35 or later with --pod-infra-container-image: give --kubelet-version) or\n" +
			"the sandbox image is absent, unpinned or stored only under another spelling (the kubelet's image GC\n" +
			"may delete it, or an offline pod start fails), 2 on error, 3 when the sandbox image cannot be told.",
		Example: "  sandboxpin audit\n" +
			"  crictl images -o json > images.json && sandboxpin audit --images images.json --root / --kubelet-version v1.35.0",
		Args: noArgs,
	}
	n.register(c.Flags(), true)
	c.Flags().StringVar(&n.images, "images", "", "audit offline from `FILE`, the JSON `crictl images -o json` prints (no socket is asked)")
	out := addOutput(c, "text", "json", "yaml", "prometheus", "summary")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		w := c.OutOrStdout()
		a := auditNode(ctx, &n)
		switch out.format {
		case "prometheus":
			return auditPrometheus(w, a)
		case "summary":
			// node-problem-detector reads stdout only: the verdict,
			// or why there is none, comes first.
			fmt.Fprintln(w, a.summary())
		}
		if a.Err != nil {
			return a.Err
		}
		err := out.print(w, a.Verdict, func() {
			if out.format == "text" {
				printVerdict(w, a.Verdict)
			}
		})
		if err != nil {
			return err
		}
		return exit(a.exitCode())
	}
	return c
}

// printVerdict writes audit's text: every image with the runtime's own
// pinned flag beside the rule of the runtime's configuration, read its way,
// that pins it (what a correct runtime reports), then what stops the node,
// the verdict on the sandbox image and, when it is not protected, the one
// fix first.
func printVerdict(w io.Writer, v *audit.Verdict) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tRUNTIME PINNED\tSANDBOXPIN\tRULE")
	for _, img := range v.Images {
		name := img.Name
		if img.Sandbox {
			name += " (sandbox)"
		}
		verdict, rule := "-", ""
		if p := img.Predicted; p != nil {
			verdict, rule = "pin", fmt.Sprintf("%q via %s", p.Pattern, p.Name)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", name, img.RuntimePinned, verdict, rule)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	failed := map[string]bool{} // messages printed
	for _, f := range v.Fixes {
		if f.Urgency == resolve.UrgencyStops && !failed[f.Message] {
			fmt.Fprintf(w, "FAIL: %s\n", f.Message)
			failed[f.Message] = true
		}
	}
	for _, f := range v.Findings {
		switch f.Kind {
		case resolve.KindSandboxNotStoredAsConfigured:
			if v.Status == audit.StatusNotStoredAsConfigured {
				fmt.Fprintf(w, "FAIL: the image stored as %s is pinned, but %s\n", v.Sandbox.StoredAs, f.Message)
				continue
			}
			fallthrough
		case resolve.KindSandboxAbsent, resolve.KindSandboxUnpinned:
			fmt.Fprintf(w, "FAIL: %s\n", f.Message)
		}
	}
	switch {
	case v.Status == audit.StatusOK:
		fmt.Fprintf(w, "OK: %s pins its sandbox image %s\n", v.Runtime, v.SandboxImage)
	case v.Fix != nil && v.Status != audit.StatusAbsent && !failed[v.Fix.Message]:
		fmt.Fprintf(w, "FIX: %s\n", v.Fix.Message)
	}
}

// lookup is the runtime's own lookup of its sandbox image ref, found or
// not: ImageStatus with the name exactly as configured, which
// applies no registry alias (containerd looks the sandbox image up in its
// image store by that name, CRI-O in containers-storage, cri-dockerd in
// Docker: seen live in TestKubeletGC of internal/kubelettest, where
// containerd 2.4.2, CRI-O 1.36.3 and cri-dockerd 0.4.4 configured with
// k8s.gcr.io/pause:3.10.1 pull it for a pod although
// registry.k8s.io/pause:3.10.1 is stored, also through the shim).
func lookup(ctx context.Context, client *cri.Client, ref string) (audit.Lookup, error) {
	img, err := client.ImageStatus(ctx, ref)
	if err != nil {
		return "", err
	}
	if img.GetId() == "" {
		return audit.LookupNotFound, nil
	}
	return audit.LookupFound, nil
}
