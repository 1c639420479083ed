package remedy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func edit(t *testing.T, in string, f func(*text) (hunk, error)) (string, error) {
	t.Helper()
	tx := splitText([]byte(in))
	h, err := f(tx)
	if err != nil {
		return "", err
	}
	out, err := tx.apply([]hunk{h})
	require.NoError(t, err)
	return string(out), nil
}

func TestReplaceValue(t *testing.T) {
	for _, tc := range []struct {
		name, in, flag, old, value, want string
		line                             int
		err                              error
	}{
		{name: "double quotes", in: "a = 1\n  sandbox_image = \"k8s.gcr.io/pause:3.9\" # old\n", line: 2, old: "k8s.gcr.io/pause:3.9", value: "registry.k8s.io/pause:3.9",
			want: "a = 1\n  sandbox_image = \"registry.k8s.io/pause:3.9\" # old\n"},
		{name: "single quotes, CRLF", in: "[x]\r\n  sandbox = 'pause:3.9'\r\nb = 2\r\n", line: 2, old: "pause:3.9", value: "registry.k8s.io/pause:3.9",
			want: "[x]\r\n  sandbox = 'registry.k8s.io/pause:3.9'\r\nb = 2\r\n"},
		{name: "no final newline", in: "x = \"a:1\"", line: 1, old: "a:1", value: "b:2", want: "x = \"b:2\""},
		{name: "the flag's value, not another's", in: "ARGS=\"--x=p:1 --pod-infra-container-image=p:1\"\n", line: 1, flag: "--pod-infra-container-image", old: "p:1", value: "q:2",
			want: "ARGS=\"--x=p:1 --pod-infra-container-image=q:2\"\n"},
		{name: "flag and value apart", in: "ExecStart=/bin/d --pod-infra-container-image p:1 \\\n", line: 1, flag: "--pod-infra-container-image", old: "p:1", value: "q:2",
			want: "ExecStart=/bin/d --pod-infra-container-image q:2 \\\n"},
		{name: "a longer value is not it", in: "x = \"p:1.1\"\n", line: 1, old: "p:1", value: "q", err: ErrUnsupported},
		{name: "line out of the file", in: "x = 1\n", line: 3, old: "p", value: "q", err: ErrChanged},
		{name: "the flag on a continuation line", in: "ExecStart=/bin/d \\\n  --pod-infra-container-image=p:1 \\\n  --x\n", line: 1, flag: "--pod-infra-container-image", old: "p:1", value: "q:2",
			want: "ExecStart=/bin/d \\\n  --pod-infra-container-image=q:2 \\\n  --x\n"},
		{name: "the flag twice", in: "X=\"--pod-infra-container-image=p:1 --a --pod-infra-container-image 'p:1'\"\n", line: 1, flag: "--pod-infra-container-image", old: "p:1", value: "q:2",
			want: "X=\"--pod-infra-container-image=q:2 --a --pod-infra-container-image 'q:2'\"\n"},
		{name: "an escaped string", in: "sandbox = \"registry.k8s.io\\u002Fpause:3.10\"\n", line: 1, old: "registry.k8s.io/pause:3.10", value: "q", err: ErrUnsupported},
		{name: "no flag", in: "x = \"p:1\"\n", line: 1, flag: "--f", old: "p:1", value: "q", err: ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := edit(t, tc.in, func(tx *text) (hunk, error) { return tx.replaceValue(tc.line, tc.flag, tc.old, tc.value) })
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRemoveFlag(t *testing.T) {
	const f = "--pod-infra-container-image"
	for _, tc := range []struct {
		name, in, value, want string
		line                  int
		err                   error
	}{
		{name: "last in an env value", in: "KUBELET_KUBEADM_ARGS=\"--a=b --pod-infra-container-image=p:1\"\n", line: 1, value: "p:1",
			want: "KUBELET_KUBEADM_ARGS=\"--a=b\"\n"},
		{name: "first in an env value", in: "Environment=\"KUBELET_EXTRA_ARGS=--pod-infra-container-image=p:1 --node-ip=1.2.3.4\"\r\n", line: 1, value: "p:1",
			want: "Environment=\"KUBELET_EXTRA_ARGS=--node-ip=1.2.3.4\"\r\n"},
		{name: "alone", in: "ARGS=--pod-infra-container-image=p:1\n", line: 1, value: "p:1", want: "ARGS=\n"},
		{name: "value apart", in: "X=\"--a --pod-infra-container-image p:1 --b\"\n", line: 1, value: "p:1", want: "X=\"--a --b\"\n"},
		{name: "a continuation line", in: "ExecStart=/d \\\n  --pod-infra-container-image=p:1 \\\n  --x\n", line: 2, value: "p:1",
			want: "ExecStart=/d \\\n  --x\n"},
		{name: "the last continuation line", in: "[Service]\nExecStart=/d --a \\\n  --pod-infra-container-image=p:1\nRestart=always\n", line: 3, value: "p:1",
			want: "[Service]\nExecStart=/d --a\nRestart=always\n"},
		{name: "continued environment value, flag first", in: "KUBELET_EXTRA_ARGS=--pod-infra-container-image=p:1 \\\n  --node-ip=10.0.0.7\n", line: 1, value: "p:1",
			want: "KUBELET_EXTRA_ARGS=\\\n  --node-ip=10.0.0.7\n"},
		{name: "continued environment value, flag last", in: "# x\nKUBELET_EXTRA_ARGS=\"--node-ip=10.0.0.7 \\\n  --pod-infra-container-image=p:1\"\n", line: 2, value: "p:1",
			want: "# x\nKUBELET_EXTRA_ARGS=\"--node-ip=10.0.0.7 \\\n  \"\n"},
		{name: "the first line of a continued command", in: "ExecStart=/d \\\n  --pod-infra-container-image p:1 \\\n  --x\nRestart=always\n", line: 1, value: "p:1",
			want: "ExecStart=/d \\\n  --x\nRestart=always\n"},
		{name: "twice, another value first", in: "X=\"--pod-infra-container-image=p:0 --a --pod-infra-container-image=p:1\"\n", line: 1, value: "p:1",
			want: "X=\"--a\"\n"},
		{name: "twice over lines", in: "ExecStart=/d --pod-infra-container-image=p:1 \\\n  --pod-infra-container-image p:1\n", line: 2, value: "p:1",
			want: "ExecStart=/d\n"},
		{name: "the value on the next line", in: "ExecStart=/d --pod-infra-container-image \\\n  p:1\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "a quoted value", in: "X=--pod-infra-container-image=\"p:1\"\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "the value after a continuation, no blank", in: "ExecStart=/d --pod-infra-container-image=p:1 --pod-infra-container-image\\\n  p:1\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "a backslash after the flag", in: "X=\"--pod-infra-container-image\\ --pod-infra-container-image p:1\"\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "an escape in a value", in: "X=\"--pod-infra-container-image=\\0 --pod-infra-container-image p:1\"\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "a backslash before the flag", in: "X=\"x\\--pod-infra-container-image p:1\"\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "line out of the file", in: "X=1\n", line: 2, value: "p:1", err: ErrChanged},
		{name: "another value", in: "X=--pod-infra-container-image=p:11\n", line: 1, value: "p:1", err: ErrUnsupported},
		{name: "a longer flag", in: "X=--pod-infra-container-image-x=p:1\n", line: 1, value: "p:1", err: ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := edit(t, tc.in, func(tx *text) (hunk, error) { return tx.removeFlag(tc.line, f, tc.value) })
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRemoveYAMLArg(t *testing.T) {
	const name = "pod-infra-container-image"
	for _, tc := range []struct {
		name, in, want string
		line           int
		err            error
	}{
		{name: "v1beta4 item", line: 5,
			in:   "nodeRegistration:\n  kubeletExtraArgs: # kept\n  - name: node-ip\n    value: 10.0.0.7\n  - name: pod-infra-container-image\n    value: \"p:1\"\n  taints: []\n",
			want: "nodeRegistration:\n  kubeletExtraArgs: # kept\n  - name: node-ip\n    value: 10.0.0.7\n  taints: []\n"},
		{name: "v1beta4 item, value first", line: 4,
			in:   "kubeletExtraArgs:\n- value: p:1\n  name: pod-infra-container-image\n",
			want: "kubeletExtraArgs:\n"},
		{name: "v1beta3 map", line: 3,
			in:   "nodeRegistration:\n  kubeletExtraArgs:\n    pod-infra-container-image: 'p:1' # old\n    node-ip: 10.0.0.7\n",
			want: "nodeRegistration:\n  kubeletExtraArgs:\n    node-ip: 10.0.0.7\n"},
		{name: "another value", line: 2, in: "kubeletExtraArgs:\n  pod-infra-container-image: p:2\n", err: ErrUnsupported},
		{name: "an item with more keys", line: 2, in: "kubeletExtraArgs:\n- name: pod-infra-container-image\n  value: p:1\n  extra: x\n", err: ErrUnsupported},
		{name: "a flow map item", line: 3,
			in:   "kubeletExtraArgs:\n- {name: node-ip, value: 10.0.0.7}\n- {name: pod-infra-container-image, value: \"p:1\"} # old\ntaints: []\n",
			want: "kubeletExtraArgs:\n- {name: node-ip, value: 10.0.0.7}\ntaints: []\n"},
		{name: "a flow map item with an anchor", line: 2, in: "kubeletExtraArgs:\n- {name: pod-infra-container-image, value: &p p:1}\n", err: ErrUnsupported},
		{name: "a flow map item with more keys", line: 2, in: "kubeletExtraArgs:\n- {name: pod-infra-container-image, value: p:1, x: y}\n", err: ErrUnsupported},
		{name: "a flow map", line: 2, in: "nodeRegistration:\n  kubeletExtraArgs: {node-ip: 10.0.0.7, pod-infra-container-image: p:1}\n", err: ErrUnsupported},
		{name: "a flow sequence", line: 2, in: "nodeRegistration:\n  kubeletExtraArgs: [{name: pod-infra-container-image, value: p:1}]\n", err: ErrUnsupported},
		{name: "an alias", line: 3, in: "x: &p p:1\nkubeletExtraArgs:\n  pod-infra-container-image: *p\n", err: ErrUnsupported},
		{name: "an escaped string", line: 2, in: "kubeletExtraArgs:\n  pod-infra-container-image: \"p\\x3a1\"\n", err: ErrUnsupported},
		{name: "line out of the file", line: 9, in: "kubeletExtraArgs:\n", err: ErrChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.line
			if tc.name == "v1beta4 item, value first" {
				line = 3
			}
			got, err := edit(t, tc.in, func(tx *text) (hunk, error) { return tx.removeYAMLArg(line, name, "p:1") })
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSetTOML(t *testing.T) {
	table := []string{"plugins", "io.containerd.cri.v1.images", "pinned_images"}
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{name: "in place", in: "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'a:1'\n",
			want: "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = 'p:1'\n"},
		{name: "added after the table's last key, in its quotes", in: "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  other = 'x'\n\n[grpc]\n",
			want: "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  other = 'x'\n  sandbox = 'p:1'\n\n[grpc]\n"},
		{name: "an empty table", in: "[plugins . \"io.containerd.cri.v1.images\" . pinned_images] # pins\n[grpc]\n",
			want: "[plugins . \"io.containerd.cri.v1.images\" . pinned_images] # pins\n  sandbox = \"p:1\"\n[grpc]\n"},
		{name: "a new table at the end, CRLF, unterminated", in: "version = 3\r\n[grpc]\r\n  address = \"/x\"",
			want: "version = 3\r\n[grpc]\r\n  address = \"/x\"\r\n\r\n[plugins.\"io.containerd.cri.v1.images\".pinned_images]\r\n  sandbox = \"p:1\"\r\n"},
		{name: "a subtable is not the table", in: "[plugins.\"io.containerd.cri.v1.images\".pinned_images.x]\n  sandbox = \"a\"\n",
			want: "[plugins.\"io.containerd.cri.v1.images\".pinned_images.x]\n  sandbox = \"a\"\n\n[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"p:1\"\n"},
		{name: "a multi-line string", in: "[plugins.\"io.containerd.cri.v1.images\".pinned_images]\nsandbox = \"\"\"\na\"\"\"\n", err: ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := edit(t, tc.in, func(tx *text) (hunk, error) { return tx.setTOML(table, "sandbox", "p:1") })
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestUnified(t *testing.T) {
	tx := splitText([]byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"))
	got := unified("/etc/f", tx, []hunk{{start: 13, n: 1, repl: []string{"x\n"}}, {start: 1, n: 1}}, false)
	assert.Equal(t, "--- a/etc/f\n+++ b/etc/f\n@@ -1,5 +1,4 @@\n 1\n-2\n 3\n 4\n 5\n@@ -11,6 +10,6 @@\n 11\n 12\n 13\n-14\n+x\n 15\n 16\n", got)
	created := unified("/etc/new", splitText(nil), []hunk{{repl: []string{"a\n", "b"}}}, true)
	assert.Equal(t, "--- /dev/null\n+++ b/etc/new\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n", created)
}
