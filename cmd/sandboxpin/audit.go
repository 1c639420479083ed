package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/reference"
	"github.com/sandboxpin/sandboxpin/resolve"
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
	if n.endpointToAsk() == "" {
		return fail(stderr, "audit: no CRI socket: give --runtime-endpoint (none of the default sockets exists)")
	}
	client, err := n.dial(ctx)
	if err != nil {
		return fail(stderr, "audit: %v", err)
	}
	defer client.Close()
	res, err := n.resolve(ctx, client)
	if err != nil {
		return fail(stderr, "audit: %v", err)
	}
	if res.SandboxImage == "" {
		return fail(stderr, "audit: cannot tell the %s sandbox image: %s", res.Runtime, orNone(res.Notes))
	}
	// The table predicts the runtime's own verdict: its pins read its way
	// (crio-compat on CRI-O), without the Strict sandbox-image rule that
	// res.Matcher adds for what must be pinned (the FAIL lines below and
	// serve's counts): on CRI-O both agree with what CRI-O reports.
	m, err := pin.Compile(res.Pins, pin.WithMode(res.PinMode), pin.WithSource("node ("+res.Runtime+")"))
	if err != nil {
		return fail(stderr, "audit: %v", err)
	}
	ictx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	images, err := client.Images(ictx)
	if err != nil {
		return fail(stderr, "audit: %v", err)
	}
	stored, err := storedAsConfigured(ictx, client, res.SandboxImage)
	if err != nil {
		return fail(stderr, "audit: %v", err)
	}

	var sandbox *runtimeapi.Image
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tRUNTIME PINNED\tSANDBOXPIN\tRULE")
	for _, img := range images {
		name := imageLabel(img)
		if sandbox == nil && isImage(img, res.SandboxImage) {
			sandbox = img
			name += " (sandbox)"
		}
		verdict, rule := "-", ""
		if got, ok := m.Explain(img); ok {
			verdict, rule = "pin", fmt.Sprintf("%q via %s", got.Pattern, got.Name)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", name, img.GetPinned(), verdict, rule)
	}
	_ = tw.Flush()

	switch {
	case sandbox == nil:
		fmt.Fprintf(stdout, "\nFAIL: the sandbox image %s (%s) is not in the runtime's image store: pods cannot start offline; pre-pull it under that name\n", res.SandboxImage, res.Runtime)
		return exitCheck
	case !sandbox.GetPinned():
		fmt.Fprintf(stdout, "\nFAIL: %s does not pin its sandbox image %s (stored as %s): the kubelet's image GC may delete it; run a pinning CRI shim, upgrade the runtime, or configure the exact stored name\n", res.Runtime, res.SandboxImage, imageLabel(sandbox))
		if !stored {
			fmt.Fprintf(stdout, "FAIL: %s\n", aliasOnly(res, sandbox))
		}
		fmt.Fprintf(stdout, "FIX: %s\n", fixAdvice(res, sandbox))
		return exitCheck
	case !stored:
		fmt.Fprintf(stdout, "\nFAIL: the image stored as %s is pinned, but %s\n", imageLabel(sandbox), aliasOnly(res, sandbox))
		fmt.Fprintf(stdout, "FIX: %s\n", fixAdvice(res, sandbox))
		return exitCheck
	}
	fmt.Fprintf(stdout, "\nOK: %s pins its sandbox image %s\n", res.Runtime, res.SandboxImage)
	return exitOK
}

// neverPins is in resolve's note on a runtime release that never sets
// Image.pinned, whatever its config.
const neverPins = "never reports Image.pinned"

// fixAdvice says what makes the runtime pin its sandbox image, which it
// stores as sandbox but does not pin: on a release that never pins, resolve's
// note (upgrade, or a pinning shim); where the image is stored under another
// spelling than the configured one, that spelling, in the file and line that
// configure it (the runtimes that pin compare the configured string with
// the stored names, see resolve's exactPinCheck); else a shim or an upgrade,
// with resolve's notes.
func fixAdvice(res *resolve.Result, sandbox *runtimeapi.Image) string {
	for _, n := range res.Notes {
		if strings.Contains(n, neverPins) {
			return "no configuration can: " + n
		}
	}
	for _, tag := range sandbox.GetRepoTags() {
		if tag == res.SandboxImage || !reference.Equal(tag, res.SandboxImage) {
			continue
		}
		where := "where the runtime's config names it"
		for _, c := range res.Candidates {
			if c.Role == resolve.RuntimeUses && c.Image == res.SandboxImage && c.Source != resolve.RuntimeDefault && c.Origin != "" {
				where = c.Origin
				break
			}
		}
		advice := fmt.Sprintf("configure the sandbox image as %s, the name it is stored under, in place of %s (%s)", tag, res.SandboxImage, where)
		if last := res.SandboxImage[strings.LastIndexByte(res.SandboxImage, '/')+1:]; res.Runtime == "containerd" && !strings.ContainsAny(last, ":@") {
			// internal/cri/server/images/image_pull.go getLabels at v2.0.0 and v2.3.4.
			advice += ": containerd 2.x compares pinned_images as strings and never pins a name without a tag (containerd#13314)"
		}
		return advice
	}
	advice := "run a pinning CRI shim in front of the runtime, or upgrade the runtime"
	if len(res.Notes) > 0 {
		advice += "; " + strings.Join(res.Notes, "; ")
	}
	return advice
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

// aliasOnly says what it means that the sandbox image is stored only under
// another spelling of the configured name: a registry alias, or the same
// name in other letter case (CRI-O pins that one, its compare ignores case,
// but looks the image up by the configured string; TestCRIOLive).
func aliasOnly(res *resolve.Result, sandbox *runtimeapi.Image) string {
	how := "an alias spelling"
	if slices.ContainsFunc(sandbox.GetRepoTags(), func(t string) bool { return strings.EqualFold(t, res.SandboxImage) }) {
		how = "a spelling that differs only in letter case"
	}
	return fmt.Sprintf("%s looks its sandbox image up by the configured name %s, and nothing is stored under it: "+
		"%s is the same image under %s, so the runtime pulls %s for every new pod sandbox, and pods cannot start offline",
		res.Runtime, res.SandboxImage, imageLabel(sandbox), how, res.SandboxImage)
}

// imageLabel names an image by its first tag, else digest, else ID.
func imageLabel(img *runtimeapi.Image) string {
	if t := img.GetRepoTags(); len(t) > 0 {
		return t[0]
	}
	if d := img.GetRepoDigests(); len(d) > 0 {
		return d[0]
	}
	return img.GetId()
}

// isImage reports whether img is ref under the default aliases, by any of
// its tags or digests, or by ID.
func isImage(img *runtimeapi.Image, ref string) bool {
	if img.GetId() == ref {
		return true
	}
	for _, names := range [][]string{img.GetRepoTags(), img.GetRepoDigests()} {
		for _, s := range names {
			if reference.Equal(s, ref) {
				return true
			}
		}
	}
	return false
}
