package remedy

import (
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// overlay is a file system with some files replaced or added: the node
// as the plan would leave it. Its directories, opened or listed, list the
// files it adds and the edited files as edited (nodefs's ReadDir opens a
// directory and reads it, as every reader of a node does).
type overlay struct {
	base  fs.FS
	files map[string][]byte // by fs path
}

func (o *overlay) Open(name string) (fs.File, error) {
	if b, ok := o.files[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(b))}, r: strings.NewReader(string(b))}, nil
	}
	fi, err := o.Stat(name)
	if err != nil || !fi.IsDir() {
		return o.base.Open(name)
	}
	list, err := o.ReadDir(name)
	if err != nil {
		return nil, err
	}
	return &memDir{info: fi, list: list}, nil
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

// ReadDir lists name as the base lists it, with the overlay's files in
// it (an edited file as edited) and the directories that hold them.
func (o *overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	list, err := fs.ReadDir(o.base, name)
	if err != nil && !o.addsDir(name) {
		return nil, err
	}
	put := func(e fs.DirEntry) {
		if i := slices.IndexFunc(list, func(l fs.DirEntry) bool { return l.Name() == e.Name() }); i >= 0 {
			if !e.IsDir() {
				list[i] = e
			}
			return
		}
		list = append(list, e)
	}
	for p, b := range o.files {
		if path.Dir(p) == name {
			put(fs.FileInfoToDirEntry(memInfo{name: path.Base(p), size: int64(len(b))}))
		}
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if path.Dir(d) == name {
				put(fs.FileInfoToDirEntry(memInfo{name: path.Base(d), dir: true}))
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

// memDir is an opened directory of the overlay, its entries listed.
type memDir struct {
	info fs.FileInfo
	list []fs.DirEntry
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: fs.ErrInvalid}
}
func (d *memDir) Close() error { return nil }

// ReadDir reads the next n entries (all when n <= 0), as
// fs.ReadDirFile says.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		list := d.list
		d.list = nil
		return list, nil
	}
	if len(d.list) == 0 {
		return nil, io.EOF
	}
	list := d.list[:min(n, len(d.list))]
	d.list = d.list[len(list):]
	return list, nil
}
