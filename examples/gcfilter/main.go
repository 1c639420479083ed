// Command gcfilter is for operators and kubelet or runtime developers who
// want to know what an image garbage collector like the kubelet's may delete
// on a node: every image that is neither pinned nor used by a container.
// Since kubelet 1.29 nothing but the CRI Image.Pinned flag protects the
// sandbox ("pause") image, and many runtimes set it too rarely; gcfilter
// honours the runtime's own flag and also what the node's resolved sandbox
// image and pinned images (package resolve) and --pin patterns pin, so it
// shows what a correct runtime (or the crishim example) would keep.
//
// "In use" is alias-aware: a container started from "nginx:1.27",
// "k8s.gcr.io/coredns/coredns:v1.11.1" or an image ID keeps the image stored
// as "docker.io/library/nginx:1.27", "registry.k8s.io/coredns/coredns:v1.11.1"
// or with that ID.
//
//	go run ./examples/gcfilter --images examples/testdata/crictl-images.json \
//		--in-use examples/testdata/in-use.txt --root examples/testdata/node \
//		--pin 'registry.example.com/infra/*'
//	go run ./examples/gcfilter --runtime-endpoint unix:///run/containerd/containerd.sock --in-use in-use.txt
//
// --images reads the output of `crictl images -o json`; --runtime-endpoint
// asks the runtime (ListImages) instead. --in-use names one image reference,
// repo digest or image ID a line ('#' starts a comment). It prints one image a
// line, KEEP or DELETE with the reason, or with -o json a document for
// programs. The exit code is 0, or 2 on error.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sandboxpin/sandboxpin/criinfo/cri"
	"github.com/sandboxpin/sandboxpin/pin"
	"github.com/sandboxpin/sandboxpin/resolve"
)

// timeout bounds the whole run, whose only slow part is the runtime's socket.
const timeout = 30 * time.Second

// maxImagesFile is the largest --images file read, the 16 MiB a CRI
// ListImages answer may have (as JSON it is of the same order).
const maxImagesFile = 64 << 20

// Exit codes.
const (
	exitOK    = 0
	exitError = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	images          string   // crictl images -o json file
	runtimeEndpoint string   // or the runtime's CRI socket
	inUse           string   // file of image references in use, optional
	pins            []string // extra pin patterns
	root            string   // the node's root file system
	output          string   // "text" or "json"
}

// parseFlags reads args; the error is flag.ErrHelp after --help.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("gcfilter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.images, "images", "", "the runtime's images: a `file` of `crictl images -o json` output")
	fs.StringVar(&o.runtimeEndpoint, "runtime-endpoint", "", "or ask the runtime at this CRI socket (unix:///path)")
	fs.StringVar(&o.inUse, "in-use", "", "a `file` of the images containers use, one reference, repo digest or ID a line")
	fs.Func("pin", "an extra pin `pattern` (repeatable): reference, digest, prefix* or *keyword*",
		func(p string) error { o.pins = append(o.pins, p); return nil })
	fs.StringVar(&o.root, "root", "/", "the node's root file system, read to resolve the sandbox image and pinned images")
	fs.StringVar(&o.output, "o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gcfilter (--images FILE | --runtime-endpoint URL) [--in-use FILE] [--pin PATTERN]... [--root DIR] [-o text|json]\n\n"+
			"Prints which images a kubelet-like image GC may delete: those neither pinned (by the\n"+
			"runtime, the node's resolved pins or --pin) nor in use (alias-aware).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case (o.images == "") == (o.runtimeEndpoint == ""):
		return o, errors.New("give one of --images and --runtime-endpoint")
	case o.output != "text" && o.output != "json":
		return o, fmt.Errorf("-o %q: want text or json", o.output)
	}
	return o, nil
}

// run is the program: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "gcfilter: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	verdicts, err := filter(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gcfilter: %v\n", err)
		return exitError
	}
	if o.output == "json" {
		err = writeJSON(stdout, verdicts)
	} else {
		err = writeText(stdout, verdicts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gcfilter: %v\n", err)
		return exitError
	}
	return exitOK
}

// inUseEntry is one line of the --in-use file, compiled to match the images
// it names.
type inUseEntry struct {
	ref    string       // as written
	origin string       // file:line
	m      *pin.Matcher // pins exactly the images ref names
	used   bool         // ref named at least one image
}

// Verdict is what a GC may do with one image, and why. It is the JSON form
// of one image in the output.
type Verdict struct {
	Image           string   `json:"image"` // the first repo tag, else repo digest, else ID
	ID              string   `json:"id"`
	RepoTags        []string `json:"repoTags"`
	RepoDigests     []string `json:"repoDigests"`
	Size            uint64   `json:"size"`
	Deletable       bool     `json:"deletable"`
	Reason          string   `json:"reason"`
	PinnedByRuntime bool     `json:"pinnedByRuntime"`       // the runtime's own Pinned
	PinnedBy        *Rule    `json:"pinnedBy,omitempty"`    // the resolved or --pin rule that pins it
	InUseBy         string   `json:"inUseBy,omitempty"`     // the --in-use line that names it (file:line)
	InUseRef        string   `json:"inUseRef,omitempty"`    // and its reference
	MatchedName     string   `json:"matchedName,omitempty"` // the image's name that the rule or line matched
}

// Rule is a pin rule that pins an image.
type Rule struct {
	Pattern string `json:"pattern"` // as written
	Source  string `json:"source"`  // "--pin" or "node (containerd)"
}

// filter loads the images, the pins and the in-use list that o names and
// decides for each image.
func filter(ctx context.Context, o options, stderr io.Writer) ([]Verdict, error) {
	var (
		images []*runtimeapi.Image
		live   resolve.LiveRuntime
	)
	if o.runtimeEndpoint != "" {
		c, err := cri.Dial(ctx, o.runtimeEndpoint)
		if err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		defer func() { _ = c.Close() }()
		if images, err = c.Images(ctx); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
		live = c
	} else {
		var err error
		if images, err = readImages(o.images); err != nil {
			return nil, err
		}
	}
	pins, err := matcher(ctx, o, live)
	if err != nil {
		return nil, err
	}
	var entries []*inUseEntry
	if o.inUse != "" {
		if entries, err = readInUse(o.inUse); err != nil {
			return nil, err
		}
	}

	verdicts := make([]Verdict, 0, len(images))
	for _, img := range images {
		if img == nil {
			continue
		}
		verdicts = append(verdicts, decide(img, pins, entries))
	}
	for _, e := range entries {
		if !e.used {
			fmt.Fprintf(stderr, "gcfilter: warning: %s: %s names no image the runtime has\n", e.origin, e.ref)
		}
	}
	return verdicts, nil
}

// decide says whether a GC may delete img: not when the runtime pins it, a
// rule in pins matches it, or an in-use entry names it, in that order of
// reasons.
func decide(img *runtimeapi.Image, pins *pin.Matcher, entries []*inUseEntry) Verdict {
	v := Verdict{
		Image:           displayName(img),
		ID:              img.GetId(),
		RepoTags:        nonNil(img.GetRepoTags()),
		RepoDigests:     nonNil(img.GetRepoDigests()),
		Size:            img.GetSize(),
		PinnedByRuntime: img.GetPinned(),
	}
	var reasons []string
	if v.PinnedByRuntime {
		reasons = append(reasons, "pinned by the runtime")
	}
	if match, ok := pins.Explain(img); ok {
		v.PinnedBy = &Rule{Pattern: match.Pattern, Source: match.Source}
		v.MatchedName = match.Name
		reasons = append(reasons, fmt.Sprintf("pinned by %q (%s) as %s", match.Pattern, match.Source, match.Name))
	}
	for _, e := range entries {
		match, ok := e.m.Explain(img)
		if !ok {
			continue
		}
		e.used = true
		if v.InUseBy == "" {
			v.InUseBy, v.InUseRef = e.origin, e.ref
			if v.MatchedName == "" {
				v.MatchedName = match.Name
			}
			if match.Name == e.ref {
				reasons = append(reasons, fmt.Sprintf("in use: %s (%s)", e.ref, e.origin))
			} else {
				reasons = append(reasons, fmt.Sprintf("in use: %s (%s) names %s", e.ref, e.origin, match.Name))
			}
		}
	}
	v.Deletable = len(reasons) == 0
	if v.Deletable {
		v.Reason = "not pinned and not in use"
	} else {
		v.Reason = strings.Join(reasons, "; ")
	}
	return v
}

// displayName returns the name people know img by.
func displayName(img *runtimeapi.Image) string {
	if tags := img.GetRepoTags(); len(tags) > 0 {
		return tags[0]
	}
	if digests := img.GetRepoDigests(); len(digests) > 0 {
		return digests[0]
	}
	return img.GetId()
}

// matcher compiles the node's resolved pins (files under o.root and the live
// runtime when there is one) joined with o.pins.
func matcher(ctx context.Context, o options, live resolve.LiveRuntime) (*pin.Matcher, error) {
	if fi, err := os.Stat(o.root); err != nil {
		return nil, fmt.Errorf("--root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("--root %s: not a directory", o.root)
	}
	res, err := resolve.Resolve(ctx, resolve.Options{Root: resolve.DirFS(o.root), Live: live})
	if err != nil {
		return nil, fmt.Errorf("resolve the node's pins: %w", err)
	}
	return res.Matcher(o.pins...)
}

// readImages reads a `crictl images -o json` file: the protobuf JSON of a
// ListImagesResponse.
func readImages(path string) ([]*runtimeapi.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxImagesFile+1))
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	if len(b) > maxImagesFile {
		return nil, fmt.Errorf("--images %s: larger than %d bytes", path, maxImagesFile)
	}
	var resp runtimeapi.ListImagesResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("--images %s: not `crictl images -o json` output: %w", path, err)
	}
	return resp.GetImages(), nil
}

// readInUse reads the --in-use file: one reference, repo digest or image ID
// a line; blank lines and text from '#' are ignored.
func readInUse(path string) ([]*inUseEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--in-use: %w", err)
	}
	defer func() { _ = f.Close() }()
	var entries []*inUseEntry
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		ref, _, _ := strings.Cut(sc.Text(), "#")
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		origin := fmt.Sprintf("%s:%d", path, line)
		// A pattern would make "in use" mean something else.
		if strings.Contains(ref, "*") {
			return nil, fmt.Errorf("%s: %q: want an image reference, repo digest or ID, not a pattern", origin, ref)
		}
		m, err := pin.Compile([]string{ref}, pin.WithSource(origin))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		entries = append(entries, &inUseEntry{ref: ref, origin: origin, m: m})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--in-use %s: %w", path, err)
	}
	return entries, nil
}

// nonNil returns s, or an empty slice for nil, so that JSON says [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeText prints one image a line, then a summary.
func writeText(w io.Writer, verdicts []Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var n int
	var bytes uint64
	for _, v := range verdicts {
		action := "KEEP"
		if v.Deletable {
			action = "DELETE"
			n++
			bytes += v.Size
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", action, v.Image, v.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := fmt.Fprintf(w, "\n%d of %d images deletable (%d bytes)\n", n, len(verdicts), bytes); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// report is the JSON output.
type report struct {
	Images         []Verdict `json:"images"`
	Deletable      int       `json:"deletable"`      // how many images may be deleted
	DeletableBytes uint64    `json:"deletableBytes"` // and their size
}

func writeJSON(w io.Writer, verdicts []Verdict) error {
	r := report{Images: verdicts}
	for _, v := range verdicts {
		if v.Deletable {
			r.Deletable++
			r.DeletableBytes += v.Size
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
