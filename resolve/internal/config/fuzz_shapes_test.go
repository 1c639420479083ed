package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxpin/sandboxpin/resolve/internal/nodefs"
	"github.com/sandboxpin/sandboxpin/resolve/internal/nodetest"
	"github.com/sandboxpin/sandboxpin/resolve/internal/yamlfile"
)

// The fuzz targets here build deep and wide inputs from a few numbers, so
// that the fuzzer explores shapes near every limit rather than random
// bytes, and check that a limit error comes exactly when the shape passes
// the limit.

// checkLimit fails unless err is nil or a *nodefs.ConfigError for path with a line
// inside data, and unless it wraps nodefs.ErrLimit exactly when wantLimit says so.
func checkLimit(t *testing.T, err error, path string, data []byte, wantLimit bool) {
	t.Helper()
	checkConfigErr(t, err, path, data)
	if got := errors.Is(err, nodefs.ErrLimit); got != wantLimit {
		t.Fatalf("error %v: nodefs.ErrLimit = %t, want %t", err, got, wantLimit)
	}
	var ce *nodefs.ConfigError
	if wantLimit && errors.As(err, &ce) && ce.Line <= 0 {
		t.Fatalf("limit error %v names no line", err)
	}
}

// yamlShapePrefix is a block scalar, a comment and a quoted scalar full of
// brackets and quotes; it adds prefixNodes nodes and no nesting. A key
// counts 2 nodes (the key and its value); a mapping 1 more.
const (
	yamlShapePrefix = "pre: |\n  [{'\"\n\n   ]]\n# ['\npre2: 'it''s [\n  {'\n"
	prefixNodes     = 4 // "pre", the block scalar, "pre2", the quoted scalar
)

// kubeadmShape builds a kubeadm config of one of eight shapes. It returns
// the file and whether it passes a limit: -1 when that is not known
// exactly (aliases are counted from above), 0 or 1 when it is.
func kubeadmShape(depth, width uint16, kind, wrap byte) (string, int) {
	d, w := int(depth)%300, int(width)
	var doc string
	over := -1
	mapRoot := false
	switch kind % 8 {
	case 0:
		d = max(d, 1)
		doc, over = yamlFlowSeq(d), b2i(d > yamlfile.MaxDepth)
	case 1:
		d = max(d, 1)
		doc, over, mapRoot = "a: "+yamlFlowMap(d), b2i(d+1 > yamlfile.MaxDepth), true
	case 2:
		d = max(d, 1)
		doc, over, mapRoot = yamlBlockMap(d, 1+w%4), b2i(d > yamlfile.MaxDepth), true
	case 3:
		d = max(d, 1)
		doc, over = yamlBlockSeq(d), b2i(d > yamlfile.MaxDepth)
	case 4:
		doc, mapRoot = yamlLaughs(d%10, 1+w%30), true
	case 5:
		n := max(w%25000, 1)
		doc, over, mapRoot = yamlKeys(n), b2i(1+2*n+prefixNodes*int(wrap&1) > yamlfile.MaxNodes), true
	case 6:
		n := int(depth) % 1200
		doc, over = yamlDocs(n), b2i(n > yamlfile.MaxDocuments)
	case 7:
		a, f := max(d%128, 1), w%128
		m := yamlBlockMap(a, 2)
		doc = m[:len(m)-2] + yamlFlowSeq(f)
		if f == 0 {
			doc = m
		}
		over, mapRoot = b2i(a+f > yamlfile.MaxDepth), true
	}
	if wrap&1 != 0 && mapRoot {
		doc = yamlShapePrefix + doc
	}
	if wrap&2 != 0 {
		doc = strings.ReplaceAll(doc, "\n", "\r\n")
	}
	if wrap&4 != 0 && kind%8 != 6 {
		// Not for documents: parseKubeadm splits them on "---" lines in
		// the file's bytes, which UTF-16 hides; go-yaml then decodes the
		// first document only, so the document count does not apply.
		doc = utf16LE(doc)
	}
	return doc, over
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func FuzzKubeadmShapes(f *testing.F) {
	for kind := range byte(8) {
		f.Add(uint16(yamlfile.MaxDepth), uint16(yamlfile.MaxDepth), kind, byte(0))
		f.Add(uint16(yamlfile.MaxDepth+1), uint16(24998), kind, byte(1))
	}
	f.Add(uint16(9), uint16(8), byte(4), byte(3))
	f.Fuzz(func(t *testing.T, depth, width uint16, kind, wrap byte) {
		doc, over := kubeadmShape(depth, width, kind, wrap)
		data := []byte(doc)
		path := "/" + kubeadmFile
		cfg, err := parseKubeadm(path, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parseKubeadm = %v, %v: want exactly one of them", cfg, err)
		}
		if over >= 0 {
			checkLimit(t, err, path, data, over == 1)
		} else {
			checkConfigErr(t, err, path, data)
		}
		checkYAMLBound(t, data)
	})
}

// FuzzYAMLBound checks on any bytes that the pre-scan counts from above:
// a document that passes it decodes to no more nodes, and no deeper, than
// it counted.
func FuzzYAMLBound(f *testing.F) {
	for _, tt := range yamlLimitTests {
		if len(tt.content) < 4096 {
			f.Add([]byte(tt.content))
		}
	}
	f.Add([]byte("a: &a\n- &b [1, *a]\n- *b\nb:\n- &c x\n- *c\n"))
	f.Add([]byte("? &k [a, b]\n: &v {c: *k}\n<<: *v\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseKubeadm("/"+kubeadmFile, data)
		checkConfigErr(t, err, "/"+kubeadmFile, data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parseKubeadm = %v, %v: want exactly one of them", cfg, err)
		}
		checkYAMLBound(t, data)
	})
}

// unitShape builds cri-dockerd's unit (and drop-ins) of one of five shapes,
// and says whether it passes a limit.
func unitShape(words, lines uint16, kind byte) (map[string]string, bool) {
	n, l := int(words)%5000, max(int(lines)%300, 1)
	files := map[string]string{}
	args := strings.Repeat("--a=b ", max(n-1, 0))
	switch kind % 5 {
	case 0: // one ExecStart of n words
		files[unitLib] = "[Service]\nExecStart=/usr/bin/cri-dockerd " + args + "\n"
		return files, n > maxCommandWords
	case 1: // l ExecStart= lines
		files[unitLib] = "[Service]\n" + strings.Repeat("ExecStart=/x --pod-infra-container-image=p\n", l)
		return files, l > maxExecStarts
	case 2: // n words over l continuation lines
		var b strings.Builder
		b.WriteString("[Service]\nExecStart=/usr/bin/cri-dockerd")
		for i := range max(n-1, 0) {
			if i%l == 0 {
				b.WriteString(" \\\n")
			}
			b.WriteString(" --a=b")
		}
		files[unitLib] = b.String() + "\n"
		return files, n > maxCommandWords
	case 3: // n words, then a quote that never closes
		files[unitLib] = "[Service]\nExecStart=/x " + args + "\"--pod-infra-container-image=p\n"
		return files, n > maxCommandWords
	default: // l ExecStart= lines (with resets) over the unit and 4 drop-ins
		files[unitLib] = "[Service]\nExecStart=/x\n"
		for i := range 4 {
			files[fmt.Sprintf("etc/systemd/system/cri-docker.service.d/%d.conf", i)] = "[Service]\nExecStart=\n" +
				strings.Repeat("ExecStart=/x a\n", l/4)
		}
		return files, 1+4*(1+l/4) > maxExecStarts
	}
}

func FuzzUnitShapes(f *testing.F) {
	for kind := range byte(5) {
		f.Add(uint16(maxCommandWords), uint16(maxExecStarts), kind)
		f.Add(uint16(maxCommandWords+1), uint16(maxExecStarts+1), kind)
	}
	f.Fuzz(func(t *testing.T, words, lines uint16, kind byte) {
		files, over := unitShape(words, lines, kind)
		cfg, err := ReadCRIDockerd(nodetest.MapFS(files))
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadCRIDockerd = %v, %v: want exactly one of them", cfg, err)
		}
		var ce *nodefs.ConfigError
		if errors.As(err, &ce) {
			checkLimit(t, err, ce.Path, []byte(files[strings.TrimPrefix(ce.Path, "/")]), over)
		} else if over {
			t.Fatalf("ReadCRIDockerd = %v, want a limit error", err)
		}
	})
}

// envShape builds kubeadm-flags.env in one of four shapes, and says
// whether it passes a limit.
func envShape(words, vars uint16, kind byte) (string, bool) {
	n, v := int(words)%5000, max(int(vars)%1200, 1)
	switch kind % 4 {
	case 0: // n flags in one variable
		return kubeletKubeadmArgs + "=\"" + strings.Repeat("--a=b ", n) + "\"\n", n > maxCommandWords
	case 1: // n flags over v continuation lines
		var b strings.Builder
		b.WriteString(kubeletKubeadmArgs + "=\"")
		for i := range n {
			if i%v == 0 {
				b.WriteString("\\\n")
			}
			b.WriteString("--a=b ")
		}
		return b.String() + "\"\n", n > maxCommandWords
	case 2: // v variables
		var b strings.Builder
		for i := range v {
			fmt.Fprintf(&b, "V%d=%d\n", i, i)
		}
		return b.String(), v > maxEnvVariables
	default: // one variable assigned v times
		return strings.Repeat(kubeletKubeadmArgs+"='--pod-infra-container-image=p'\n", v), false
	}
}

func FuzzEnvShapes(f *testing.F) {
	for kind := range byte(4) {
		f.Add(uint16(maxCommandWords), uint16(maxEnvVariables), kind)
		f.Add(uint16(maxCommandWords+1), uint16(maxEnvVariables+1), kind)
	}
	f.Fuzz(func(t *testing.T, words, vars uint16, kind byte) {
		content, over := envShape(words, vars, kind)
		cfg, err := ReadKubelet(nodetest.MapFS(map[string]string{kubeletFlagsEnv: content}))
		if (cfg == nil) == (err == nil) {
			t.Fatalf("ReadKubelet = %v, %v: want exactly one of them", cfg, err)
		}
		checkLimit(t, err, "/"+kubeletFlagsEnv, []byte(content), over)
	})
}
