package remedy

import (
	"os"
	"reflect"
	"strings"
	"testing"

	crio "github.com/BurntSushi/toml"
	toml "github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/yaml"
)

// FuzzSetTOML: for any file containerd's decoder (go-toml/v2) reads, an
// edit that setTOML makes yields a file the decoder reads with the new
// value at the key and every other key unchanged.
func FuzzSetTOML(f *testing.F) {
	for _, p := range []string{
		"../resolve/testdata/nodes/containerd-2.3-v3-migrated/etc/containerd/config.toml",
		"../resolve/testdata/nodes/containerd-2.2-v3-ignored-v2-key/etc/containerd/config.toml",
		"../resolve/testdata/nodes/containerd-1.7-alias/etc/containerd/config.toml",
		"../resolve/testdata/nodes/containerd-2.3-v4-default/etc/containerd/config.toml",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(b, false)
	}
	f.Add([]byte("[plugins.'io.containerd.cri.v1.images'.pinned_images]\r\n  sandbox = 'x' # c\r\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, v3 bool) {
		var before map[string]any
		if toml.Unmarshal(b, &before) != nil {
			return
		}
		table, key := v2Table, "sandbox_image"
		if v3 {
			table, key = v3Table, "sandbox"
		}
		const value = "registry.k8s.io/pause:3.10"
		tx := splitText(b)
		h, err := tx.setTOML(table, key, value)
		if err != nil {
			return
		}
		out, err := tx.apply([]hunk{h})
		if err != nil {
			t.Fatal(err)
		}
		var after map[string]any
		if err := toml.Unmarshal(out, &after); err != nil {
			t.Fatalf("the edited file does not decode: %v\n%s", err, out)
		}
		m := after
		for _, k := range table {
			next, ok := m[k].(map[string]any)
			if !ok {
				t.Fatalf("no table %s after the edit:\n%s", k, out)
			}
			m = next
		}
		if m[key] != value {
			t.Fatalf("%s = %v, want %q:\n%s", key, m[key], value, out)
		}
		delete(m, key)
		prune(after)
		prune(before)
		deleteKey(before, table, key)
		prune(before)
		if (len(before) > 0 || len(after) > 0) && !reflect.DeepEqual(before, after) {
			t.Fatalf("other keys changed:\nbefore %v\nafter  %v\n%s", before, after, out)
		}
	})
}

// deleteKey removes table.key from m.
func deleteKey(m map[string]any, table []string, key string) {
	for _, k := range table {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, key)
}

// prune removes empty tables, which an added table header may leave or
// make.
func prune(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			prune(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// FuzzRemoveYAMLArg: for any kubeadm config that kubeadm's decoder
// (sigs.k8s.io/yaml) reads, a removal of the kubelet argument leaves a file
// that it reads, with one argument fewer.
func FuzzRemoveYAMLArg(f *testing.F) {
	b, err := os.ReadFile("../resolve/testdata/nodes/kubelet-flag-dropin/etc/kubernetes/kubeadm.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, 13)
	f.Add([]byte("nodeRegistration:\n  kubeletExtraArgs:\n    pod-infra-container-image: \"p:1\" # x\n    a: b\n"), 3)
	f.Add([]byte("nodeRegistration:\n  kubeletExtraArgs:\n  - {name: pod-infra-container-image, value: 'p:1'}\n  - {name: a, value: b}\n"), 3)
	f.Fuzz(func(t *testing.T, b []byte, line int) {
		var before any
		if yaml.Unmarshal(b, &before) != nil {
			return
		}
		tx := splitText(b)
		h, err := tx.removeYAMLArg(line, "pod-infra-container-image", "registry.k8s.io/pause:3.10.2")
		if err != nil {
			h, err = tx.removeYAMLArg(line, "pod-infra-container-image", "p:1")
		}
		if err != nil {
			return
		}
		out, err := tx.apply([]hunk{h})
		if err != nil {
			t.Fatal(err)
		}
		var after any
		if err := yaml.Unmarshal(out, &after); err != nil {
			t.Fatalf("the edited file does not decode: %v\n%s", err, out)
		}
		if strings.Count(string(out), "pod-infra-container-image") != strings.Count(string(b), "pod-infra-container-image")-1 {
			t.Fatalf("not one argument removed:\n%s", out)
		}
		if len(out) >= len(b) {
			t.Fatalf("nothing removed:\n%s", out)
		}
	})
}

// FuzzRemoveFlag: a removal takes every --pod-infra-container-image of
// the command (continuation lines included) and its value, one of them
// value, and keeps every other word and the lines around it.
func FuzzRemoveFlag(f *testing.F) {
	f.Add(`KUBELET_KUBEADM_ARGS="--a=b --pod-infra-container-image=p:1 --c"`, "p:1")
	f.Add(`Environment="KUBELET_EXTRA_ARGS=--pod-infra-container-image p:1"`, "p:1")
	f.Add("  --pod-infra-container-image=p:1 \\", "p:1")
	f.Add(`ARGS="--pod-infra-container-image=p:0 --x --pod-infra-container-image p:1"`, "p:1")
	f.Fuzz(func(t *testing.T, line, value string) {
		const flag = "--pod-infra-container-image"
		if strings.ContainsAny(line, "\r\n") || value == "" {
			return
		}
		in := "X=1 \\\n" + line + "\nY=2\n"
		tx := splitText([]byte(in))
		h, err := tx.removeFlag(2, flag, value)
		if err != nil {
			return
		}
		out, err := tx.apply([]hunk{h})
		if err != nil {
			t.Fatal(err)
		}
		split := func(s string) []string {
			// Blanks as systemd splits a command line and the remover
			// reads them: space and tab (WHITESPACE, src/basic/string-util.h
			// at v257, less the line ends); a \v is part of a word.
			return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" \t\n\"'\\", r) })
		}
		// The words of in without the flags and their values: "--flag V",
		// "--flag=V", "NAME=--flag V", "NAME=--flag=V".
		var want []string
		words := split(in)
		for i := 0; i < len(words); i++ {
			w := words[i]
			at := strings.Index(w, flag)
			for at > 0 && w[at-1] != '=' {
				next := strings.Index(w[at+1:], flag)
				if next < 0 {
					at = -1
					break
				}
				at += 1 + next
			}
			switch rest := ""; {
			case at < 0:
				want = append(want, w)
				continue
			default:
				rest = w[at+len(flag):]
				if at > 0 {
					want = append(want, w[:at])
				}
				if rest == "" {
					i++ // the value, the next word
				} else if rest[0] != '=' {
					want = append(want, w[at:]) // a longer flag: not it
				}
			}
		}
		// "NAME=--flag=V next" becomes "NAME=next": a word that ends in '='
		// is compared joined with the word after it, on both sides.
		join := func(ws []string) []string {
			var out []string
			for i := 0; i < len(ws); i++ {
				w := ws[i]
				for strings.HasSuffix(w, "=") && i+1 < len(ws) {
					i++
					w += ws[i]
				}
				out = append(out, w)
			}
			return out
		}
		if got := split(string(out)); !reflect.DeepEqual(join(got), join(want)) {
			t.Fatalf("words %q, want %q (%q)", got, want, out)
		}
		for _, w := range split(string(out)) {
			// The flag as a word starts it: "--flag=V", "--flag", "NAME=--flag=V",
			// "NAME=--flag" (a NAME that holds the flag's text is no flag).
			if strings.HasPrefix(w, flag+"=") || w == flag || strings.Contains(w, "="+flag+"=") || strings.HasSuffix(w, "="+flag) {
				t.Fatalf("a flag is left in %q: %q", w, out)
			}
		}
		if !strings.HasSuffix(string(out), "Y=2\n") || !strings.HasPrefix(string(out), "X=1") {
			t.Fatalf("the lines around changed: %q", out)
		}
	})
}

// FuzzReplaceCRIO: for any file CRI-O's decoder (BurntSushi/toml, as
// pkg/config decodes at v1.36.3) reads with a string crio.image.pause_image,
// replacing the value on the line that sets it yields a file the decoder
// reads with the new value there and every other key unchanged.
func FuzzReplaceCRIO(f *testing.F) {
	for _, p := range []string{
		"../resolve/testdata/nodes/crio-dropins/etc/crio/crio.conf.d/10-crio.conf",
		"../examples/testdata/crio-node/etc/crio/crio.conf",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("[crio.image]\r\npause_image = 'a:1' # x\r\nother = \"a:1\"\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before map[string]any
		if _, err := crio.Decode(string(b), &before); err != nil {
			return
		}
		c, _ := before["crio"].(map[string]any)
		img, _ := c["image"].(map[string]any)
		old, ok := img["pause_image"].(string)
		if !ok || old == "" {
			return
		}
		const value = "registry.k8s.io/pause:3.10.2"
		tx := splitText(b)
		for n := 1; n <= len(tx.lines); n++ {
			body, _ := tx.body(n)
			if keys, _, ok := tomlKeys(strings.TrimSpace(body), '='); !ok || !equalKeys(keys, []string{"pause_image"}) {
				continue
			}
			h, err := tx.replaceValue(n, "", old, value)
			if err != nil {
				continue // another pause_image line (a later one wins), or one this edit refuses
			}
			out, err := tx.apply([]hunk{h})
			if err != nil {
				t.Fatal(err)
			}
			var after map[string]any
			if _, err := crio.Decode(string(out), &after); err != nil {
				t.Fatalf("the edited file does not decode: %v\n%s", err, out)
			}
			c, _ := after["crio"].(map[string]any)
			got, _ := c["image"].(map[string]any)
			if got["pause_image"] != value {
				continue // the line of a pause_image that a later one overrides
			}
			got["pause_image"] = old
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("other keys changed:\nbefore %v\nafter  %v\n%s", before, after, out)
			}
			return
		}
	})
}
