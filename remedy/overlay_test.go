package remedy

import (
	"errors"
	"io"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOverlayLists checks that the overlay lists its files where every
// reader of a node looks: fs.ReadDir, the ReadDir of an opened directory
// (nodefs's way, read in chunks), and Stat, for an existing directory and
// a new one.
func TestOverlayLists(t *testing.T) {
	t.Parallel()
	base := fstest.MapFS{
		"etc/systemd/system/kubelet.service.d/10-kubeadm.conf": {Data: []byte("[Service]\n")},
		"etc/default/kubelet": {Data: []byte("X=1\n")},
	}
	o := &overlay{base: base, files: map[string][]byte{
		"etc/systemd/system/kubelet.service.d/90-sandboxpin.conf": []byte("[Service]\nExecStart=\n"),
		"etc/default/kubelet": []byte("X=12\n"),
		"etc/systemd/system/cri-docker.service.d/90-sandboxpin.conf": []byte("[Service]\n"),
	}}
	tests := []struct {
		name string
		dir  string
		want map[string]int64 // entry name → size (-1 for a directory)
	}{
		{name: "an existing directory with an added file", dir: "etc/systemd/system/kubelet.service.d",
			want: map[string]int64{"10-kubeadm.conf": 10, "90-sandboxpin.conf": 21}},
		{name: "an edited file, as edited", dir: "etc/default", want: map[string]int64{"kubelet": 5}},
		{name: "a new directory", dir: "etc/systemd/system/cri-docker.service.d", want: map[string]int64{"90-sandboxpin.conf": 10}},
		{name: "the directory that holds a new one", dir: "etc/systemd/system",
			want: map[string]int64{"cri-docker.service.d": -1, "kubelet.service.d": -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sizes := func(list []fs.DirEntry) map[string]int64 {
				got := map[string]int64{}
				for _, e := range list {
					fi, err := e.Info()
					require.NoError(t, err)
					got[e.Name()] = fi.Size()
					if e.IsDir() {
						got[e.Name()] = -1
					}
				}
				return got
			}
			list, err := fs.ReadDir(o, tt.dir)
			require.NoError(t, err)
			assert.Equal(t, tt.want, sizes(list), "fs.ReadDir(%q)", tt.dir)

			f, err := o.Open(tt.dir)
			require.NoError(t, err)
			d, ok := f.(fs.ReadDirFile)
			require.True(t, ok, "Open(%q) is no fs.ReadDirFile", tt.dir)
			var chunks []fs.DirEntry
			for {
				c, err := d.ReadDir(1)
				chunks = append(chunks, c...)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
			}
			require.NoError(t, f.Close())
			assert.Equal(t, tt.want, sizes(chunks), "Open(%q).ReadDir", tt.dir)

			fi, err := fs.Stat(o, tt.dir)
			require.NoError(t, err)
			assert.True(t, fi.IsDir(), "Stat(%q)", tt.dir)
		})
	}
	fi, err := fs.Stat(o, "etc/default/kubelet")
	require.NoError(t, err)
	assert.Equal(t, int64(5), fi.Size(), "Stat of an edited file")
	_, err = o.Open("etc/none")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
