package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tongbu/tongbu/codec"
)

// File layout (SPEC.md, "Replica protocol", files): the magic "TBRP", a kind
// byte ('P' publisher, 'S' subscriber), a format byte (1), the CRC-32C of
// everything after it, then a codec bulk frame (codec.Compress) holding the
// body, whose fields are uvarints and length-prefixed byte strings.
const (
	fileMagic  = "TBRP"
	fileFormat = 1
	fileHeader = len(fileMagic) + 2 + crcLen
	kindPub    = 'P'
	kindSub    = 'S'
	// maxFile bounds the file size and its decoded body.
	maxFile = 1 << 30
)

// syncFile flushes a file to stable storage. Tests that simulate process
// restarts, which keep the page cache, replace it to run fast.
var syncFile = (*os.File).Sync

// writeFileAtomic writes data to path so that a crash leaves either the old
// file or the new one: a temporary file in the same directory, fsync,
// rename, then an fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := syncFile(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil { // best effort: not every system syncs directories
		syncFile(d)
		d.Close()
	}
	return nil
}

// sealFile wraps a body in the file header and checksum.
func sealFile(kind byte, body []byte) []byte {
	packed := codec.Compress(nil, body)
	out := make([]byte, 0, fileHeader+len(packed))
	out = append(out, fileMagic...)
	out = append(out, kind, fileFormat)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(packed, castagnoli))
	return append(out, packed...)
}

// readFile reads and checks a file written by sealFile and returns its
// body. A missing file gives (nil, nil).
func readFile(path string, kind byte) ([]byte, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	if st.Size() > maxFile {
		return nil, fmt.Errorf("%w: %s is %d bytes, cap %d", ErrBadFile, path, st.Size(), maxFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	return openFile(b, kind)
}

func openFile(b []byte, kind byte) ([]byte, error) {
	if len(b) < fileHeader || !bytes.Equal(b[:len(fileMagic)], []byte(fileMagic)) {
		return nil, fmt.Errorf("%w: not a replica file", ErrBadFile)
	}
	if b[4] != kind || b[5] != fileFormat {
		return nil, fmt.Errorf("%w: kind %q format %d, want %q format %d", ErrBadFile, b[4], b[5], kind, fileFormat)
	}
	packed := b[fileHeader:]
	if crc32.Checksum(packed, castagnoli) != binary.LittleEndian.Uint32(b[6:10]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadFile)
	}
	body, err := codec.Decompress(nil, packed, maxFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	return body, nil
}

// fileReader reads the uvarints and byte strings of a file body.
type fileReader struct {
	b   []byte
	err error
}

func (r *fileReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: %s truncated", ErrBadFile, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns the next length-prefixed string, aliasing the body.
func (r *fileReader) bytes(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: %s of %d bytes, %d left", ErrBadFile, what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// count reads a count and checks it against bound and against the bytes
// left (every item takes at least one byte).
func (r *fileReader) count(what string, bound int) int {
	n := r.uvarint(what)
	if r.err == nil && (n > uint64(bound) || n > uint64(len(r.b))) {
		r.err = fmt.Errorf("%w: %s %d (cap %d, %d bytes left)", ErrBadFile, what, n, bound, len(r.b))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *fileReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", ErrBadFile, len(r.b))
	}
	return r.err
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}
