package containerdtest

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteLayout writes the OCI image layout of WriteArchive as files under
// dir (created if need be), for tools that read a layout directory, such
// as a push to a registry. It returns the image IDs, in order.
func WriteLayout(dir string, images []Image) ([]string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	archive := filepath.Join(dir, ".archive.tar")
	ids, err := WriteArchive(archive, images)
	if err != nil {
		return nil, err
	}
	defer os.Remove(archive)
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
		// WriteArchive's own names: relative, no "..".
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(h.Name, "/")))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(name, 0o750); err != nil {
				return nil, err
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return nil, err
		}
	}
}
