package critesttest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sandboxpin/sandboxpin/internal/registrytest"
)

// The image names below are the ones critest v1.37.0 pulls: its
// pkg/validate/consts.go, consts_linux.go, security_context_linux.go and
// multi_container_linux.go, and pkg/framework/util.go
// (DefaultLinuxContainerImage) at v1.37.0. What each real image holds is in
// images/*/Dockerfile and images/build (IMAGE_USERS) of the same tag.
const (
	e2eImages = "registry.k8s.io/e2e-test-images/"
	criTools  = "gcr.io/k8s-staging-cri-tools/"
)

// webServer is the command of the stand-ins for nginx and httpd: busybox's
// httpd on port, in the foreground, with an index page and the pid file
// that critest's HostPID spec waits for (/var/run/nginx.pid). It runs as
// /usr/sbin/nginx (a link to busybox, told the applet by argv[0]), so that
// its process is named nginx (HostPID: `pidof nginx`), and its command line
// holds "master process", as nginx's does (ContainerPID reads
// /proc/1/cmdline for it), in the directory it serves. Its first line of
// log names httpd, as Apache's does (the multi-container spec waits for
// "httpd" in the httpd container's log).
func webServer(port int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`d="/www/master process" && mkdir -p "$d" /var/run && echo ok >"$d/index.html" && `+
		`echo $$ >/var/run/nginx.pid && echo "busybox httpd on port %d" >&2 && exec -a httpd /usr/sbin/nginx -f -p %d -h "$d"`, port, port)}
}

// pauseScript is /pause of the pause image's stand-in: it waits, and ends
// on SIGTERM or SIGINT as the real pause does (as PID 1 a shell without a
// trap would ignore them).
const pauseScript = "#!/bin/sh\ntrap 'exit 0' TERM INT\nwhile :; do sleep 3600 & wait $!; done\n"

// Image is one image critest pulls, as its stand-in holds it: busybox with
// its passwd and group, plus a file named for the image (as images/image-test
// adds one), run as User with Cmd.
type Image struct {
	// Refs are the names the image is pushed under; all name one image.
	Refs []string
	// File, when set, is written at /File with the name as content, so
	// that differently named test images differ (images/image-test).
	File string
	// User is the image config's User, such as "1003:1004".
	User string
	// Cmd is the image config's Cmd; nil is ["sh"], busybox's.
	Cmd []string
	// ExtraUser adds default-user (1000) in group group-defined-in-image
	// (50000), as images/image-predefined-group does.
	ExtraUser bool
	// Pause adds /pause (pauseScript), the program of a pause image:
	// CRI-O runs it whatever the image's command (its pause_command).
	Pause bool
}

// Images returns the images critest v1.37.0 pulls on Linux, as busybox
// stand-ins. Two cannot be faked and are left out: the test image pinned by
// digest (test-image-digest@sha256:9700f9a2…), whose digest no other content
// has, and the Windows images.
func Images() []Image {
	ws := webServer(80)
	return []Image{
		{Refs: []string{e2eImages + "busybox:1.29-2"}},
		{Refs: []string{e2eImages + "nginx:1.14-2"}, Cmd: ws},
		{Refs: []string{e2eImages + "httpd:2.4.39-4"}, Cmd: ws},
		// The real image runs a setuid-root program that prints its
		// effective uid; a stand-in without one prints the uid it runs as.
		{Refs: []string{e2eImages + "nonewprivs:1.3"}, Cmd: []string{"sh", "-c", "echo Effective uid: $(id -u)"}},
		// images/hostnet-nginx serves on port 12003 (consts_linux.go).
		{Refs: []string{criTools + "hostnet-nginx-" + runtime.GOARCH}, Cmd: webServer(12003)},
		{Refs: []string{"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9"}, Cmd: []string{"/pause"}, Pause: true},
		{Refs: []string{criTools + "test-image-user-uid"}, User: "1002"},
		{Refs: []string{criTools + "test-image-user-username"}, User: "www-data"},
		{Refs: []string{criTools + "test-image-user-uid-group"}, User: "1003:1004"},
		{Refs: []string{criTools + "test-image-user-username-group"}, User: "www-data:1004"},
		{Refs: []string{criTools + "test-image-predefined-group"}, User: "1000", ExtraUser: true},
		{Refs: []string{criTools + "test-image-latest"}, File: "test-image-latest"},
		{Refs: []string{criTools + "test-image-1:latest"}, File: "test-image-1"},
		{Refs: []string{criTools + "test-image-2:latest"}, File: "test-image-2"},
		{Refs: []string{criTools + "test-image-3:latest"}, File: "test-image-3"},
		{Refs: []string{criTools + "test-image-tags:1", criTools + "test-image-tags:2", criTools + "test-image-tags:3"}, File: "same-image"},
		{Refs: []string{criTools + "test-image-tag:test"}, File: "test"},
		{Refs: []string{criTools + "test-image-tag:all"}, File: "all"},
	}
}

// etcUsers and etcGroups are /etc/passwd and /etc/group of the busybox
// image, which hold www-data (33).
const (
	etcUsers = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
`
	etcGroups = `root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
wheel:x:10:root
www-data:x:33:
operator:x:37:
staff:x:50:
users:x:100:
nogroup:x:65534:
`
	extraUsers  = "default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh\n"
	extraGroups = "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n"
)

// epoch is the time stamp of every file, so that the images are the same
// on every run.
var epoch = time.Unix(0, 0).UTC()

// tarFile is one entry of a layer.
type tarFile struct {
	name, link string // link: a symbolic link's target
	hard       bool   // link is a hard link's target, a name in the layer
	mode       int64
	data       []byte
	dir        bool
}

// layer returns a layer holding files.
func layer(files []tarFile) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.hard:
			h.Typeflag, h.Linkname = tar.TypeLink, f.link
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	p := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(p)), nil })
}

// baseFiles returns busybox at /bin/busybox with a hard link for each of
// its applets (`busybox --list-full`), as the busybox image has them (a
// MaskedPaths spec masks /bin/ls: a symbolic link would mask busybox
// itself), /etc/passwd and /etc/group, and the directories a shell expects.
func baseFiles(busybox string, extra bool) ([]tarFile, error) {
	exe, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	pw, gr := etcUsers, etcGroups
	if extra {
		pw, gr = pw+extraUsers, gr+extraGroups
	}
	files := []tarFile{}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "home", "var", "var/run", "var/www"} {
		files = append(files, tarFile{name: d, mode: 0o755, dir: true})
	}
	files = append(files,
		tarFile{name: "tmp", mode: 0o1777, dir: true},
		tarFile{name: "bin/busybox", mode: 0o755, data: exe},
		tarFile{name: "etc/passwd", mode: 0o644, data: []byte(pw)},
		tarFile{name: "etc/group", mode: 0o644, data: []byte(gr)},
		tarFile{name: "usr/sbin/nginx", link: "/bin/busybox", mode: 0o777},
		// Debian's busybox-static has no pgrep and no ipcs, which
		// busybox 1.29 has and critest runs: pgrep in its execSync
		// spec (checkSleepLinuxCmd, consts.go), where pidof answers the
		// question (is a sleep left?), and `ipcs -m` in the HostIpc
		// specs, which look for a segment's id in the list.
		tarFile{name: "bin/pgrep", mode: 0o755, data: []byte("#!/bin/sh\nexec pidof \"$@\"\n")},
		tarFile{name: "bin/ipcs", mode: 0o755, data: []byte("#!/bin/sh\nexec cat /proc/sysvipc/shm\n")},
	)
	dirs := map[string]bool{"bin": true, "sbin": true, "usr/bin": true, "usr/sbin": true}
	for _, l := range strings.Fields(string(out)) {
		if l == "bin/busybox" || !dirs[path.Dir(l)] {
			continue
		}
		files = append(files, tarFile{name: l, link: "bin/busybox", hard: true, mode: 0o755})
	}
	return files, nil
}

// build returns img's stand-in.
func (img Image) build(busybox string) (v1.Image, error) {
	files, err := baseFiles(busybox, img.ExtraUser)
	if err != nil {
		return nil, err
	}
	if img.File != "" {
		files = append(files, tarFile{name: img.File, mode: 0o644, data: []byte(img.File + "\n")})
	}
	if img.Pause {
		files = append(files, tarFile{name: "pause", mode: 0o755, data: []byte(pauseScript)})
	}
	l, err := layer(files)
	if err != nil {
		return nil, err
	}
	v, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cf, err := v.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Config.User = img.User
	cf.Config.Cmd = img.Cmd
	if cf.Config.Cmd == nil {
		cf.Config.Cmd = []string{"sh"}
	}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	return mutate.ConfigFile(v, cf)
}

// Push builds every image of [Images] from the busybox binary at busybox
// (a static one: Debian's busybox-static) and stores it in reg under each of
// its names (see [registrytest.Path]).
func Push(t testing.TB, reg *registrytest.Registry, busybox string) {
	t.Helper()
	for _, img := range Images() {
		v, err := img.build(busybox)
		if err != nil {
			t.Fatalf("critesttest: image %s: %v", img.Refs[0], err)
		}
		for _, ref := range img.Refs {
			p, err := registrytest.Path(ref)
			if err != nil {
				t.Fatalf("critesttest: %v", err)
			}
			tag, err := name.NewTag(reg.Addr+"/"+p, name.Insecure)
			if err != nil {
				t.Fatalf("critesttest: %v", err)
			}
			if err := remote.Write(tag, v); err != nil {
				t.Fatalf("critesttest: push %s: %v", tag, err)
			}
		}
	}
}

// PauseImage is the sandbox image to configure the runtime with: the pause
// image critest pulls itself, served by the registry like the others.
const PauseImage = "registry.k8s.io/pause:3.9"
