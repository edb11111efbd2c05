package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A workspace's disk quota is a filesystem of its own: a sparse ext4
// image of Limits.DiskBytes in NativeOptions.DiskDir, attached to a loop
// device and mounted (nosuid, nodev) over the workspace directory the
// daemon made, in the daemon's mount namespace, so the host sees the
// agent's files where it always did. The kernel then refuses, with
// ENOSPC, any write past the size or any file past the inode count,
// whatever the sandbox does; the host's filesystem only ever holds the
// image, which cannot grow past its size. Project quotas would need the
// host's filesystem to have them enabled; a loop filesystem needs only
// root and e2fsprogs. The sandbox never reaches the image or the loop
// device, only the filesystem, so the kernel only parses metadata it
// wrote itself (from a template mkfs.ext4 made).
//
// On Destroy the mount is detached, its files are copied to the
// directory beneath (where the workspace outlives its sandbox until the
// session is purged), the loop device clears itself (LO_FLAGS_AUTOCLEAR)
// once the filesystem is gone, and the image is removed (kept, as
// ID.img.kept, if the host's disk was too full to copy it). Cleanup does
// the same for what a daemon that died left behind.

// diskInodeBytes is the bytes of quota per inode: 128 files per MiB, 131072
// for the default GiB (a node_modules of 50,000 files fits; a sandbox
// making files without end stops there).
const diskInodeBytes = 8192

// diskSuffix names a sandbox's image in DiskDir: ID + diskSuffix.
const diskSuffix = ".img"

// disk is one sandbox's quota filesystem.
type disk struct {
	image string // the image file
	loop  string // /dev/loopN
	ws    string // the mount point: the workspace on the host
	root  int    // the filesystem's root directory, read from on release
	under int    // the workspace directory beneath the mount, copied to on release
}

// mkfsPath finds mkfs.ext4, which a daemon's PATH may not name.
func mkfsPath() (string, error) {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mkfs.ext4 not found (install e2fsprogs)")
}

// newDisk makes the image, a copy of the template for its size and
// owner, attaches it to a free loop device and mounts it on ws, whose
// directory (empty, the daemon's) is wsFd. ctx bounds mkfs.
func newDisk(ctx context.Context, dir, id, ws string, wsFd int, size int64, uid, gid int) (_ *disk, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk dir: %w", err)
	}
	// The kernel parses what is in there as a filesystem: no one but the
	// daemon may have written it.
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("disk dir %s must be a directory of uid %d that no one else may write", dir, os.Geteuid())
	}
	tmpl, err := diskTemplate(ctx, dir, size, uid, gid)
	if err != nil {
		return nil, err
	}
	defer tmpl.Close()
	d := &disk{image: filepath.Join(dir, id+diskSuffix), ws: ws, root: -1, under: -1}
	// Where the files go, for a Cleanup after a daemon that died with
	// its mount namespace (systemd's PrivateMounts): then only the image
	// holds them.
	if err := os.WriteFile(wsRecord(d.image), []byte(ws), 0o600); err != nil {
		return nil, fmt.Errorf("disk image: %w", err)
	}
	img, err := os.OpenFile(d.image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.Remove(wsRecord(d.image))
		return nil, fmt.Errorf("disk image: %w", err)
	}
	defer img.Close()
	defer func() {
		if err != nil {
			d.closeFds()
			os.Remove(d.image)
			os.Remove(wsRecord(d.image))
		}
	}()
	if err := copySparse(img, tmpl, size); err != nil {
		return nil, fmt.Errorf("disk image from %s: %w", tmpl.Name(), err)
	}
	dev, err := attachLoop(int(img.Fd()))
	if err != nil {
		return nil, err
	}
	d.loop = dev.Name()
	// The mount holds the device open; once it is gone and dev is closed
	// the device clears itself.
	defer dev.Close()
	d.under, err = unix.Dup(wsFd)
	if err != nil {
		return nil, os.NewSyscallError("dup", err)
	}
	unix.CloseOnExec(d.under)
	if err := unix.Mount(d.loop, fdPath(wsFd), "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable,errors=remount-ro"); err != nil {
		return nil, &os.PathError{Op: "mount " + d.loop, Path: ws, Err: err}
	}
	// Reopened, the path leads to the new filesystem's root.
	d.root, err = unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		var st unix.Statfs_t
		if err = unix.Fstatfs(d.root, &st); err == nil && st.Type != unix.EXT4_SUPER_MAGIC {
			err = fmt.Errorf("%s is not the new filesystem", ws)
		}
	}
	if err != nil {
		_ = unix.Unmount(fdPath(wsFd), unix.MNT_DETACH)
		return nil, fmt.Errorf("disk %s: %w", ws, err)
	}
	// As the daemon's workspaces are: the sandbox user's, 0700, and with
	// nothing of the host's (mkfs makes lost+found, owned by root).
	err = errors.Join(unix.Fchmod(d.root, 0o700), unix.Unlinkat(d.root, "lost+found", unix.AT_REMOVEDIR))
	if err != nil {
		d.release(nil)
		return nil, fmt.Errorf("disk %s: %w", ws, err)
	}
	return d, nil
}

// templateSuffix names the formatted, empty images new ones are copied
// from, one per size and owner, kept in the disk directory.
const templateSuffix = ".ext4"

// diskTemplate returns, open, an empty filesystem of size bytes whose
// root is uid:gid's, made with mkfs.ext4 the first time: a new disk is a
// copy of its few hundred KiB of metadata, which is far quicker than
// running mkfs for each (the warm pool makes one per session). Every
// disk so made has the same UUID, which nothing here reads.
func diskTemplate(ctx context.Context, dir string, size int64, uid, gid int) (*os.File, error) {
	name := filepath.Join(dir, fmt.Sprintf(".template-%d-%d-%d%s", size, uid, gid, templateSuffix))
	if f, err := os.Open(name); err == nil {
		return f, nil
	}
	mkfs, err := mkfsPath()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".template-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("disk template: %w", err)
	}
	defer os.Remove(tmp.Name()) // once renamed, a no-op
	err = tmp.Truncate(size)
	tmp.Close()
	if err != nil {
		return nil, fmt.Errorf("disk template: %w", err)
	}
	// No journal (a disk dies with its sandbox), no reserved blocks, no
	// resize inode, no discard pass and no inode table zeroing: the image
	// is a fresh sparse file that already reads as zeros.
	inodes := max(size/diskInodeBytes, 1024)
	cmd := exec.CommandContext(ctx, mkfs, "-q", "-F", "-b", "4096", "-m", "0", "-N", strconv.FormatInt(inodes, 10),
		"-O", "^has_journal,^resize_inode",
		"-E", fmt.Sprintf("root_owner=%d:%d,nodiscard,lazy_itable_init=1", uid, gid), tmp.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// Whole or not at all: two sandboxes may make it at once.
	if err := os.Rename(tmp.Name(), name); err != nil {
		return nil, fmt.Errorf("disk template: %w", err)
	}
	return os.Open(name)
}

// attachLoop binds the image open as fd to a free loop device. Another
// process may take the device the kernel named free before we configure
// it (EBUSY): then ask again.
func attachLoop(fd int) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop device: %w", err)
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(fd), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO}}
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, os.NewSyscallError("ioctl LOOP_CTL_GET_FREE", err)
		}
		name := "/dev/loop" + strconv.Itoa(n)
		dev, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("loop device: %w", err)
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == unix.EINVAL && cfg.Info.Flags&unix.LO_FLAGS_DIRECT_IO != 0 {
			// A backing filesystem without O_DIRECT: go through the
			// page cache instead.
			cfg.Info.Flags &^= unix.LO_FLAGS_DIRECT_IO
			err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		}
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if err != unix.EBUSY {
			return nil, &os.PathError{Op: "ioctl LOOP_CONFIGURE", Path: name, Err: err}
		}
	}
	return nil, errors.New("loop device: every free device was taken before it could be configured")
}

func (d *disk) closeFds() {
	for _, fd := range []*int{&d.root, &d.under} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// release detaches the filesystem from the workspace, copies its files to
// the directory beneath, lets it go (the loop device clears itself when
// the last user of the filesystem is gone) and removes the image. log, if
// set, hears about files that could not be copied.
func (d *disk) release(log func(msg string, args ...any)) error {
	var errs []error
	if d.root < 0 { // Cleanup's test: the daemon "died"
		return nil
	}
	if err := unix.Unmount(fdPath(d.root), unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		errs = append(errs, &os.PathError{Op: "umount", Path: d.ws, Err: err})
	}
	copyErr := copyTree(d.root, d.under, log)
	d.closeFds()
	if errors.Is(copyErr, unix.ENOSPC) || errors.Is(copyErr, unix.EDQUOT) {
		// The host's disk is full: the image is kept, under a name
		// Cleanup leaves alone, for an operator to mount and recover.
		// (Not for what the sandbox can cause itself, like a tree too
		// deep to copy: each session would leave an image behind.)
		kept := d.image + ".kept"
		if err := os.Rename(d.image, kept); err != nil {
			kept = d.image
		}
		return errors.Join(append(errs, fmt.Errorf("copy the workspace out of its disk (image kept as %s): %w", kept, copyErr))...)
	}
	if copyErr != nil {
		errs = append(errs, fmt.Errorf("copy the workspace out of its disk: %w", copyErr))
	}
	if err := punchImage(d.image); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []string{d.image, wsRecord(d.image)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// punchImage frees the image's blocks before it is removed. The
// filesystem may outlive its last mount here: every sandbox init started
// while it was mounted copied the daemon's mounts into its own namespace,
// and a dynamically linked harnessd maps its loader and libc from that
// copy, which keeps the copy's detached tree, this filesystem in it, and
// so its loop device and image, until that init exits. Nothing can reach
// the filesystem by then (its files are copied out, no path leads to it),
// so its blocks can go now; only the loop device and a few KiB wait.
func punchImage(img string) error {
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, st.Size()); err != nil {
		return &os.PathError{Op: "fallocate PUNCH_HOLE", Path: img, Err: err}
	}
	return nil
}

// maxCopyDepth bounds how deep copyTree goes (two descriptors per level).
const maxCopyDepth = 512

// copyTree copies what is in the directory src into the directory dst:
// directories, regular files (their holes kept, so a sparse file costs
// the host what it cost the image), hard links as links, symlinks as they
// are, fifos; owners, modes without setuid and setgid (the filesystem was
// nosuid, the host's may not be), and modification times. Extended
// attributes are not copied (a security.capability set inside must not
// come out), nor sockets or devices. Every name is resolved against its
// parent's descriptor without following symlinks, and nothing in dst is
// overwritten. It goes on past a failure and returns the first few.
func copyTree(src, dst int, log func(string, ...any)) error {
	c := &copier{links: map[uint64]string{}, dstRoot: dst, log: log}
	c.dir(src, dst, "", 0)
	return errors.Join(c.errs...)
}

type copier struct {
	links   map[uint64]string // inode -> its first copy, relative to dstRoot
	dstRoot int
	errs    []error
	dropped int
	log     func(string, ...any)
}

func (c *copier) fail(rel string, err error) {
	if len(c.errs) < 8 {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", rel, err))
	} else {
		c.dropped++
	}
	if c.log != nil {
		c.log("workspace copy", "path", rel, "err", err)
	}
}

func (c *copier) dir(src, dst int, rel string, depth int) {
	dup, err := unix.Dup(src)
	if err != nil {
		c.fail(rel, err)
		return
	}
	f := os.NewFile(uintptr(dup), rel)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		c.fail(rel, err)
	}
	for _, name := range names {
		c.entry(src, dst, name, filepath.Join(rel, name), depth)
	}
}

func (c *copier) entry(src, dst int, name, rel string, depth int) {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		c.fail(rel, err)
		return
	}
	mode := st.Mode &^ (unix.S_ISUID | unix.S_ISGID)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if depth >= maxCopyDepth {
			c.fail(rel, fmt.Errorf("deeper than %d directories: not copied", maxCopyDepth))
			return
		}
		if err := unix.Mkdirat(dst, name, 0o700); err != nil && err != unix.EEXIST {
			c.fail(rel, err)
			return
		}
		s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			c.fail(rel, err)
			return
		}
		defer unix.Close(s)
		d, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			c.fail(rel, err)
			return
		}
		defer unix.Close(d)
		c.dir(s, d, rel, depth+1)
		c.attrs(d, rel, &st, mode&0o7777)
	case unix.S_IFREG:
		if st.Nlink > 1 {
			if first, ok := c.links[st.Ino]; ok {
				if err := unix.Linkat(c.dstRoot, first, dst, name, 0); err != nil && err != unix.EEXIST {
					c.fail(rel, err)
				}
				return
			}
			c.links[st.Ino] = rel
		}
		c.file(src, dst, name, rel, &st, mode&0o7777)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(src, name, buf)
		if err == nil {
			err = unix.Symlinkat(string(buf[:n]), dst, name)
		}
		if err == nil {
			err = unix.Fchownat(dst, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		}
		if err != nil && err != unix.EEXIST {
			c.fail(rel, err)
		}
	case unix.S_IFIFO:
		if err := unix.Mknodat(dst, name, unix.S_IFIFO|mode&0o777, 0); err != nil && err != unix.EEXIST {
			c.fail(rel, err)
			return
		}
		if err := unix.Fchownat(dst, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			c.fail(rel, err)
		}
	}
}

func (c *copier) file(src, dst int, name, rel string, st *unix.Stat_t, mode uint32) {
	s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		c.fail(rel, err)
		return
	}
	in := os.NewFile(uintptr(s), rel)
	defer in.Close()
	d, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == unix.EEXIST {
		return // already copied (a Cleanup before this release)
	}
	if err != nil {
		c.fail(rel, err)
		return
	}
	out := os.NewFile(uintptr(d), rel)
	defer out.Close()
	if err := copySparse(out, in, st.Size); err != nil {
		c.fail(rel, err)
	}
	c.attrs(d, rel, st, mode)
}

// attrs gives a copy its owner, mode and times.
func (c *copier) attrs(fd int, rel string, st *unix.Stat_t, mode uint32) {
	err := errors.Join(unix.Fchown(fd, int(st.Uid), int(st.Gid)), unix.Fchmod(fd, mode),
		unix.UtimesNanoAt(fd, "", []unix.Timespec{st.Atim, st.Mtim}, unix.AT_EMPTY_PATH))
	if err != nil {
		c.fail(rel, err)
	}
}

// copySparse copies the data extents of in (size bytes) to out, leaving
// the holes as holes.
func copySparse(out, in *os.File, size int64) error {
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break // only a hole is left
		}
		if err != nil {
			return os.NewSyscallError("lseek SEEK_DATA", err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return os.NewSyscallError("lseek SEEK_HOLE", err)
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(out, in, hole-data); err != nil && err != io.EOF {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}

// Cleanup releases what the sandboxes of a daemon that died left in
// NativeOptions.DiskDir: each image's filesystem still mounted over a
// workspace is detached and its files copied to the directory beneath
// (the workspace of an interrupted session stays readable); an image no
// longer mounted (its mount went with the daemon's mount namespace) is
// mounted privately and copied to the workspace it names; then the
// image is removed. An image it could not copy out is kept for the next
// start. Call it once at startup, before any Create; images
// of live sandboxes of this driver are left alone. First, it hands over
// the repositories the agents of those sandboxes made in their users'
// directories (see cleanupGuards).
func (d *Native) Cleanup(ctx context.Context) error {
	d.cleanupGuards(ctx)
	if d.opts.DiskDir == "" {
		return nil
	}
	ents, err := os.ReadDir(d.opts.DiskDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox disks: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		id, ok := strings.CutSuffix(e.Name(), diskSuffix)
		if !ok || d.liveDisk(id) {
			continue
		}
		img := filepath.Join(d.opts.DiskDir, e.Name())
		mounts, err := imageMounts(img)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		failed := false
		for _, mp := range mounts {
			if err := releaseMount(mp, d.opts.Logger.Warn); err != nil {
				errs, failed = append(errs, err), true
			}
		}
		if len(mounts) == 0 {
			// Its mount went with the daemon's mount namespace: the
			// files are only in the image.
			ws, err := os.ReadFile(wsRecord(img))
			if err == nil {
				mounts = []string{string(ws)}
				err = recoverImage(img, string(ws), d.opts.Logger.Warn)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs, failed = append(errs, fmt.Errorf("recover %s: %w", img, err)), true
			}
		}
		if failed {
			continue // kept for the next start, or an operator
		}
		for _, f := range []string{img, wsRecord(img)} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		d.opts.Logger.InfoContext(ctx, "sandbox disk left by an earlier daemon released", "image", img, "workspaces", mounts)
	}
	return errors.Join(errs...)
}

func (d *Native) liveDisk(id string) bool {
	d.disksMu.Lock()
	defer d.disksMu.Unlock()
	return d.disks[id]
}

// releaseMount does for a mount a dead daemon left what disk.release
// does: detach it, copy it to the directory beneath, let it go.
func releaseMount(mp string, log func(string, ...any)) error {
	root, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: mp, Err: err}
	}
	defer unix.Close(root)
	if err := unix.Unmount(fdPath(root), unix.MNT_DETACH); err != nil {
		return &os.PathError{Op: "umount", Path: mp, Err: err}
	}
	under, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: mp, Err: err}
	}
	defer unix.Close(under)
	if err := copyTree(root, under, log); err != nil {
		return fmt.Errorf("copy %s out of its disk: %w", mp, err)
	}
	return nil
}

// wsRecord is the file beside an image that names its workspace.
func wsRecord(img string) string { return strings.TrimSuffix(img, diskSuffix) + ".workspace" }

// recoverImage copies the files of an image no longer mounted anywhere to
// its workspace directory ws: the image is attached and mounted on a
// directory beside it, which is detached again at once (the descriptor
// of its root keeps it), so nothing but this copy sees it. The image was
// only ever written by the kernel's ext4, never by the sandbox directly.
func recoverImage(img, ws string, log func(string, ...any)) error {
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	dev, err := attachLoop(int(f.Fd()))
	if err != nil {
		return err
	}
	defer dev.Close()
	mp := strings.TrimSuffix(img, diskSuffix) + ".mnt"
	if err := os.Mkdir(mp, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	defer os.Remove(mp)
	if err := unix.Mount(dev.Name(), mp, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "noinit_itable,errors=remount-ro"); err != nil {
		return &os.PathError{Op: "mount " + dev.Name(), Path: mp, Err: err}
	}
	root, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if uerr := unix.Unmount(mp, unix.MNT_DETACH); uerr != nil && err == nil {
		err = &os.PathError{Op: "umount", Path: mp, Err: uerr}
	}
	if err != nil {
		return err
	}
	defer unix.Close(root)
	under, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: ws, Err: err}
	}
	defer unix.Close(under)
	return copyTree(root, under, log)
}

// imageMounts returns where the loop devices backed by img are mounted.
func imageMounts(img string) ([]string, error) {
	devs := map[string]bool{} // major:minor
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop/backing_file"))
		if err != nil || strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") != img {
			continue
		}
		if n, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "dev")); err == nil {
			devs[strings.TrimSpace(string(n))] = true
		}
	}
	if len(devs) == 0 {
		return nil, nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && devs[fields[2]] && fields[3] == "/" {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// diskTimeout bounds mkfs of one sandbox's disk.
const diskTimeout = 30 * time.Second
