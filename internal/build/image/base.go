package image

import (
	"archive/tar"
	"bytes"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// passwd and group name root and the nonroot user (uid and gid 65532) the
// images run as, like distroless' static images.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// A file is one entry of a layer. Every entry is owned by root with a zero
// modification time, so only the content decides the layer's digest.
type file struct {
	path string
	dir  bool
	mode int64
	data []byte
	uid  int
}

// baseLayer returns the layer every image starts from: /etc/passwd,
// /etc/group, a home and a /tmp owned by nonroot, and, if ca is not empty,
// the CA bundle at the path Go's crypto/x509 reads on Linux.
func baseLayer(ca []byte) (v1.Layer, error) {
	files := []file{
		{path: "etc/", dir: true},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "home/", dir: true},
		{path: "home/nonroot/", dir: true, mode: 0o700, uid: NonRoot},
		{path: "tmp/", dir: true, mode: 0o1777},
	}
	if len(ca) > 0 {
		files = append(files[:1], append([]file{
			{path: "etc/ssl/", dir: true},
			{path: "etc/ssl/certs/", dir: true},
			{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		}, files[1:]...)...)
	}
	l, err := layer(files)
	return l, errors.Wrap(err, "cannot create base layer")
}

// layer returns a gzip-compressed layer holding files in the given order.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.path,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.uid,
			ModTime: time.Unix(0, 0),
			Format:  tar.FormatPAX,
		}
		if f.uid == NonRoot {
			h.Uname, h.Gname = "nonroot", "nonroot"
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, errors.Wrapf(err, "cannot write tar header of %s", f.path)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, errors.Wrapf(err, "cannot write %s", f.path)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, errors.Wrap(err, "cannot close tar")
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}
