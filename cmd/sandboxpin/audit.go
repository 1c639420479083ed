package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sandboxpin/sandboxpin/audit"
	"github.com/sandboxpin/sandboxpin/criinfo/cri"
)

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	var n nodeFlags
	n.register(fs, false)
	output := fs.String("o", "text", "output format: text; prometheus (text exposition for node_exporter's textfile collector); summary (the verdict in one line, for node-problem-detector). Same exit codes")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sandboxpin audit [--runtime-endpoint URL] [--root DIR] [-o text|prometheus|summary]")
		fmt.Fprintln(fs.Output(), "\nLists the runtime's images with its own pinned flag beside sandboxpin's verdict, and looks the sandbox image up alias-aware. Exit 0 when the sandbox image is present and the runtime pins it, 1 when it is absent or not pinned (the kubelet's image GC may delete it), 2 on error.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch *output {
	case "text":
	case "prometheus":
		return auditPrometheus(ctx, &n, stdout, stderr)
	case "summary":
		return auditSummary(ctx, &n, stdout, stderr)
	default:
		return fail(stderr, "audit: -o %q: want text, prometheus or summary", *output)
	}
	a := auditNode(ctx, &n)
	if a.Err != nil {
		return fail(stderr, "audit: %v", a.Err)
	}
	printVerdict(stdout, a.Verdict)
	return a.exitCode()
}

// printVerdict writes audit's text: every image with the runtime's own
// pinned flag beside the rule of the runtime's configuration, read its way,
// that pins it (what a correct runtime reports), then the verdict on the
// sandbox image and, when it is not protected, the one fix.
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
	for _, f := range v.Findings {
		switch f.Kind {
		case audit.SandboxNotStoredAsConfigured:
			if v.Status == audit.NotStoredAsConfigured {
				fmt.Fprintf(w, "FAIL: the image stored as %s is pinned, but %s\n", v.Sandbox.StoredAs, f.Message)
				continue
			}
			fallthrough
		case audit.SandboxAbsent, audit.SandboxUnpinned:
			fmt.Fprintf(w, "FAIL: %s\n", f.Message)
		}
	}
	switch {
	case v.Status == audit.OK:
		fmt.Fprintf(w, "OK: %s pins its sandbox image %s\n", v.Runtime, v.SandboxImage)
	case v.Fix != nil && v.Status != audit.Absent:
		fmt.Fprintf(w, "FIX: %s\n", v.Fix.Message)
	}
}

// storedAsConfigured reports whether the runtime finds its sandbox image ref
// by its own lookup: ImageStatus with the name exactly as configured, which
// applies no registry alias (containerd looks the sandbox image up in its
// image store by that name, CRI-O in containers-storage, cri-dockerd in
// Docker: seen live in TestKubeletGC of internal/kubelettest, where
// containerd 2.4.2, CRI-O 1.36.3 and cri-dockerd 0.4.4 configured with
// k8s.gcr.io/pause:3.10.1 pull it for a pod although
// registry.k8s.io/pause:3.10.1 is stored, also through the shim).
func storedAsConfigured(ctx context.Context, client *cri.Client, ref string) (bool, error) {
	img, err := client.ImageStatus(ctx, ref)
	return img.GetId() != "", err
}
