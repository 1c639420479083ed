package remedy

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// overlay is a file system with some files replaced or added: the node
// as the plan would leave it.
type overlay struct {
	base  fs.FS
	files map[string][]byte // by fs path
}

func (o *overlay) Open(name string) (fs.File, error) {
	if b, ok := o.files[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(b))}, r: strings.NewReader(string(b))}, nil
	}
	if o.addsDir(name) {
		if _, err := fs.Stat(o.base, name); err != nil {
			return &memFile{info: memInfo{name: path.Base(name), dir: true}, r: strings.NewReader("")}, nil
		}
	}
	return o.base.Open(name)
}

func (o *overlay) Stat(name string) (fs.FileInfo, error) {
	if b, ok := o.files[name]; ok {
		return memInfo{name: path.Base(name), size: int64(len(b))}, nil
	}
	fi, err := fs.Stat(o.base, name)
	if err != nil && o.addsDir(name) {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	return fi, err
}

func (o *overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	list, err := fs.ReadDir(o.base, name)
	if err != nil && !o.addsDir(name) {
		return nil, err
	}
	for p := range o.files {
		if path.Dir(p) == name || name == "." && !strings.Contains(p, "/") {
			if !slices.ContainsFunc(list, func(e fs.DirEntry) bool { return e.Name() == path.Base(p) }) {
				list = append(list, fs.FileInfoToDirEntry(memInfo{name: path.Base(p)}))
			}
		}
	}
	for p := range o.files {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if path.Dir(d) == name && !slices.ContainsFunc(list, func(e fs.DirEntry) bool { return e.Name() == path.Base(d) }) {
				list = append(list, fs.FileInfoToDirEntry(memInfo{name: path.Base(d), dir: true}))
			}
		}
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, nil
}

// addsDir reports a directory that holds an added file.
func (o *overlay) addsDir(name string) bool {
	for p := range o.files {
		if strings.HasPrefix(p, name+"/") || name == "." {
			return true
		}
	}
	return false
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

type memFile struct {
	info memInfo
	r    *strings.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *memFile) Close() error               { return nil }
