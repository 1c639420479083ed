// Command releasetool is scripts/release.sh's helper: it writes a
// file-system module proxy, the DaemonSet's image archive and SBOMs, with
// package release.
//
//	releasetool proxy -dir DIR -version V -time T [-rev REV] MODDIR...
//	releasetool image -o FILE -ref REF -version V ARCH=BINARY...
//	releasetool sbom -time T BINARY...
//
// proxy adds version V of the module in each MODDIR (relative to the
// current directory, the top of a git repository that is no linked
// worktree) to the proxy in DIR, as committed at REV (default: the module's
// tag, V or MODDIR/V). image
// writes the OCI layout archive and prints its index digest. sbom writes
// BINARY.spdx.json beside each binary. T is an RFC 3339 time.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxpin/sandboxpin/internal/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "releasetool:", err)
		os.Exit(1)
	}
}

// errUsage reports a command line releasetool does not take.
var errUsage = errors.New("usage: releasetool proxy|image|sbom FLAGS ARGS (see the package doc)")

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", "", "proxy directory")
	version := fs.String("version", "", "the release's version")
	when := fs.String("time", "", "the release commit's time, RFC 3339")
	rev := fs.String("rev", "", "proxy: the git revision (default: each module's tag)")
	out := fs.String("o", "", "image: the archive to write")
	ref := fs.String("ref", "", "image: the image's name")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var t time.Time
	if *when != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *when); err != nil {
			return fmt.Errorf("-time: %w", err)
		}
	}
	switch args[0] {
	case "proxy":
		return proxy(*dir, *version, *rev, t, fs.Args())
	case "image":
		return image(*out, *ref, *version, fs.Args(), stdout)
	case "sbom":
		for _, bin := range fs.Args() {
			data, err := os.ReadFile(bin) //nolint:gosec // G703: the release's own file, named by scripts/release.sh
			if err != nil {
				return err
			}
			doc, err := release.SPDX(filepath.Base(bin), data, t)
			if err != nil {
				return err
			}
			if err := os.WriteFile(bin+".spdx.json", doc, 0o644); err != nil { //nolint:gosec // G306: a published file
				return err
			}
		}
		return nil
	}
	return errUsage
}

// proxy adds version of the modules in dirs to the proxy in dir.
func proxy(dir, version, rev string, t time.Time, dirs []string) error {
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	for _, d := range dirs {
		sub := strings.TrimPrefix(path.Clean(filepath.ToSlash(d)), ".")
		sub = strings.TrimPrefix(sub, "/")
		src := release.Source{Root: top, Subdir: sub, Rev: rev}
		if rev == "" {
			src.Rev = path.Join(sub, version)
		}
		if err := release.AddModule(dir, version, t, src); err != nil {
			return err
		}
	}
	return nil
}

// image writes the image of the binaries (ARCH=FILE) to out.
func image(out, ref, version string, args []string, stdout io.Writer) error {
	var bins []release.Binary
	for _, a := range args {
		arch, file, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: %w", a, errUsage)
		}
		data, err := os.ReadFile(file) //nolint:gosec // G703: the release's own file, named by scripts/release.sh
		if err != nil {
			return err
		}
		bins = append(bins, release.Binary{Arch: arch, Data: data})
	}
	idx, err := release.Image(version, bins)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := release.WriteArchive(&buf, ref, idx); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil { //nolint:gosec // G306: a published file
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}
