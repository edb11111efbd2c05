package sandbox

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// diskDir is a DiskDir on the disk the test's temp directories are on
// (never a tmpfs: the image would be memory).
func diskDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "disks")
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(d), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Logf("warning: %s is a tmpfs; the host free-space checks measure memory", d)
	}
	return d
}

func freeBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// mountedAt reports whether something is mounted exactly at p in the
// test's mount namespace.
func mountedAt(t testing.TB, p string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && unescapeMount(fields[4]) == p {
			return true
		}
	}
	return false
}

// loopsBackedBy counts the loop devices whose backing file is img.
func loopsBackedBy(img string) int {
	n := 0
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop/backing_file"))
		if err == nil && strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") == img {
			n++
		}
	}
	return n
}

// loopsGone waits for the loop devices backed by img to go, and returns
// how many are left. A loop device with autoclear is released by the
// kernel after its last user closes it, asynchronously: a detached mount
// tree (an init's old root) is freed after the init is reaped, and the
// device is cleared from deferred work after that.
func loopsGone(img string) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := loopsBackedBy(img)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func enforcedBy(t testing.TB, sb Sandbox, limit string) Enforced {
	t.Helper()
	st, err := sb.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range st.Enforced {
		if e.Limit == limit {
			return e
		}
	}
	t.Fatalf("no %q in Enforced %v", limit, st.Enforced)
	return Enforced{}
}

// TestDiskQuota: a workspace with Limits.DiskBytes is a filesystem of that
// size (issue 16, item 5): writes past it fail inside with ENOSPC, files
// past its inode count likewise, and the host's free space shrinks by no
// more than the quota whatever the sandbox writes. The host sees the
// files while the session lives and keeps them after it; the image, its
// loop device and its mount are gone.
func TestDiskQuota(t *testing.T) {
	requireRoot(t)
	disks := diskDir(t)
	d := newDriver(t, NativeOptions{DiskDir: disks})
	const quota = 64 << 20
	ws := t.TempDir()
	b := newBox(t, d, Spec{Workspace: ws, Limits: Limits{DiskBytes: quota}})
	if e := enforcedBy(t, b.sb, "disk"); e.Value != quota || !strings.HasPrefix(e.By, "loop filesystem") {
		t.Fatalf("disk enforced: %v", e)
	}
	img := filepath.Join(disks, b.sb.ID()+diskSuffix)
	if loopsBackedBy(img) != 1 || !mountedAt(t, ws) {
		t.Fatalf("image %s: %d loop devices, mounted at %s: %v", img, loopsBackedBy(img), ws, mountedAt(t, ws))
	}
	// Host and sandbox see the same files.
	if err := os.WriteFile(filepath.Join(ws, "from-host"), []byte("h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := b.must("cat from-host; echo s > from-sandbox; ls -a | tr '\\n' ' '; stat -c %a /workspace"); got != "h\n. .. .harness from-host from-sandbox 700" {
		t.Errorf("inside: %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "from-sandbox")); err != nil || string(got) != "s\n" {
		t.Errorf("host reads %q, %v", got, err)
	}

	free := freeBytes(t, disks)
	attacks := []struct{ name, cmd, want string }{
		{"fallocate", "fallocate -l 200M big", "No space left on device"},
		{"dd", "dd if=/dev/urandom of=dd bs=1M count=200 2>&1", "No space left on device"},
		{"many writers", "for i in 1 2 3 4; do head -c 50M /dev/zero > w$i & done; wait; df -k . | tail -1", ""},
		{"files past the inodes", `i=0; while : 2>/dev/null > n$i; do i=$((i+1)); done; echo $i; : > last`, "No space left on device"},
		{"dirs past the inodes", "mkdir d && cd d && mkdir $(seq 9000) 2>&1 | tail -1; cd ..", "No space left on device"},
	}
	for _, a := range attacks {
		code, out := b.runTimeout(a.cmd, time.Minute)
		t.Logf("%-24s exit %d: %.200s", a.name, code, strings.ReplaceAll(out, "\n", " | "))
		if a.want != "" && !strings.Contains(out, a.want) {
			t.Errorf("%s: want %q in %q", a.name, a.want, out)
		}
		if a.name == "files past the inodes" {
			n, _ := strconv.Atoi(strings.Fields(out)[0])
			if max := int(quota / diskInodeBytes); n > max || n < max*9/10 {
				t.Errorf("%d files made: want the inode limit, about %d", n, max)
			}
		}
		// What the sandbox costs the host is the image's blocks (exact),
		// and so what the host's free space loses (with slack: other
		// programs write to this disk too).
		unix.Sync() // the image only grows as the filesystem writes back
		var st unix.Stat_t
		if err := unix.Stat(img, &st); err != nil || st.Blocks*512 > quota+1<<20 { // and the host filesystem's extent blocks
			t.Errorf("%s: the image holds %d MiB, quota %d MiB (%v)", a.name, st.Blocks*512>>20, quota>>20, err)
		}
		if used := free - freeBytes(t, disks); used > quota+64<<20 {
			t.Errorf("%s: the host lost %d MiB to a sandbox with a quota of %d MiB", a.name, used>>20, quota>>20)
		}
		b.must("find . -mindepth 1 -maxdepth 1 ! -name .harness ! -name 'from-*' -exec rm -rf {} +")
	}
	unix.Sync()
	used := free - freeBytes(t, disks)
	var ist unix.Stat_t
	_ = unix.Stat(img, &ist)
	t.Logf("image %d MiB of blocks; host free space shrank by %d MiB (quota %d MiB)", ist.Blocks*512>>20, used>>20, quota>>20)
	// A sparse file and many links to one file cost the host no more
	// once copied out.
	b.must("rm -rf d n* w* dd big; truncate -s 1G sparse; head -c 8M /dev/urandom > one; for i in $(seq 200); do ln one link$i; done; ln -s /etc/passwd sym; mkfifo fifo; mkdir -p a/b/c && echo deep > a/b/c/f")
	b.term.Close()
	// Another sandbox, made while this disk is mounted, must not hold it
	// (its init's copy of the daemon's mounts goes with its old root).
	other := newBox(t, d, Spec{Limits: Limits{DiskBytes: quota}})
	unix.Sync()
	free = freeBytes(t, disks)
	held, err := os.Open(img) // to see its blocks once it is unlinked
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := b.sb.Destroy(context.Background()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if mountedAt(t, ws) {
		t.Errorf("still mounted after Destroy")
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}
	var hst unix.Stat_t
	if err := unix.Fstat(int(held.Fd()), &hst); err != nil || hst.Blocks*512 > 1<<20 {
		t.Errorf("the removed image still holds %d KiB of the host's disk (%v)", hst.Blocks/2, err)
	}
	held.Close()
	// Its loop device may wait for the other sandbox's init (see
	// punchImage); once that is gone, so is the device.
	if n := loopsBackedBy(img); n != 0 {
		t.Logf("%d loop devices still backed by the removed image while another sandbox lives", n)
	}
	other.end()
	if n := loopsGone(img); n != 0 {
		t.Errorf("%d loop devices backed by the removed image 10s after every sandbox is gone", n)
	}
	unix.Sync()
	if got := free - freeBytes(t, disks); got > 16<<20 {
		t.Errorf("copying the workspace out took %d MiB of the host", got>>20)
	}
	for name, want := range map[string]string{"from-host": "h\n", "from-sandbox": "s\n", "a/b/c/f": "deep\n"} {
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != want {
			t.Errorf("after Destroy %s: %q %v", name, got, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(ws, "link200"), &st); err != nil || st.Nlink != 201 || st.Mode&unix.S_ISUID != 0 || st.Uid != DefaultUID {
		t.Errorf("one after Destroy: %+v %v", st, err)
	}
	if err := unix.Stat(filepath.Join(ws, "sparse"), &st); err != nil || st.Size != 1<<30 || st.Blocks > 64 {
		t.Errorf("sparse after Destroy: size %d, %d blocks, %v", st.Size, st.Blocks, err)
	}
	if l, err := os.Readlink(filepath.Join(ws, "sym")); err != nil || l != "/etc/passwd" {
		t.Errorf("sym after Destroy: %q %v", l, err)
	}
}

// TestDiskNotOnExistingDir: a workspace that already holds files (a
// user's directory) cannot get a filesystem of its own; the sandbox says
// so and works on with only RLIMIT_FSIZE.
func TestDiskNotOnExistingDir(t *testing.T) {
	requireRoot(t)
	d := newDriver(t, NativeOptions{DiskDir: diskDir(t)})
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "mine"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	giveTo(t, ws, 4242, 4242)
	b := newBox(t, d, Spec{Workspace: ws, Owner: &User{UID: 4242, GID: 4242}, Limits: Limits{DiskBytes: 32 << 20}})
	e := enforcedBy(t, b.sb, "disk")
	if !strings.HasPrefix(e.By, "not enforced: the workspace is an existing directory") {
		t.Errorf("disk enforced: %v", e)
	}
	if mountedAt(t, ws) {
		t.Errorf("a filesystem was mounted over a user's directory")
	}
	if got := b.must("cat mine"); got != "x" {
		t.Errorf("inside: %q", got)
	}
}

// TestDiskCleanup: what a daemon that died left (a mounted image over a
// workspace) is released by the next driver's Cleanup: the files are in
// the workspace directory, the mount, loop device and image are gone.
func TestDiskCleanup(t *testing.T) {
	requireRoot(t)
	disks := diskDir(t)
	d := newDriver(t, NativeOptions{DiskDir: disks})
	ws := t.TempDir()
	b := newBox(t, d, Spec{Workspace: ws, Limits: Limits{DiskBytes: 32 << 20}})
	b.must("mkdir -p sub && echo kept > sub/file")
	b.term.Close()
	img := filepath.Join(disks, b.sb.ID()+diskSuffix)
	sb := b.sb.(*nativeSandbox)
	// The same driver leaves a live sandbox's disk alone.
	if err := d.Cleanup(context.Background()); err != nil || !mountedAt(t, ws) {
		t.Fatalf("Cleanup of a live disk: %v, mounted %v", err, mountedAt(t, ws))
	}
	// The daemon dies: its descriptors are closed, the mount stays. A
	// new daemon's driver does not know the disk: it was left behind.
	sb.disk.closeFds()
	d2 := newDriver(t, NativeOptions{DiskDir: disks})
	if err := d2.Cleanup(context.Background()); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if n := loopsGone(img); mountedAt(t, ws) || n != 0 {
		t.Errorf("after Cleanup: mounted %v, %d loop devices after 10s", mountedAt(t, ws), n)
	}
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("image left: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "sub/file")); err != nil || string(got) != "kept\n" {
		t.Errorf("after Cleanup: %q %v", got, err)
	}
	// The old sandbox's own Destroy then finds nothing more to do.
	if err := b.sb.Destroy(context.Background()); err != nil {
		t.Errorf("Destroy after Cleanup: %v", err)
	}

	// A daemon in a mount namespace of its own (systemd's PrivateMounts)
	// dies: the namespace, and the mount with it, are gone; the files
	// are only in the image.
	ws = t.TempDir()
	b = newBox(t, d, Spec{Workspace: ws, Limits: Limits{DiskBytes: 32 << 20}})
	b.must("mkdir -p sub && echo only-in-the-image > sub/file && ln -s sub link")
	b.term.Close()
	img = filepath.Join(disks, b.sb.ID()+diskSuffix)
	sb = b.sb.(*nativeSandbox)
	if err := unix.Unmount(fdPath(sb.disk.root), unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	sb.disk.closeFds()
	if _, err := os.Stat(filepath.Join(ws, "sub")); !os.IsNotExist(err) {
		t.Fatalf("the workspace directory beneath the mount holds files already: %v", err)
	}
	d3 := newDriver(t, NativeOptions{DiskDir: disks})
	if err := d3.Cleanup(context.Background()); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "link/file")); err != nil || string(got) != "only-in-the-image\n" {
		t.Errorf("after Cleanup of an unmounted image: %q %v", got, err)
	}
	ents, _ := os.ReadDir(disks)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), templateSuffix) {
			t.Errorf("left in the disk directory: %s", e.Name())
		}
	}
	if n := loopsGone(img); n != 0 {
		t.Errorf("%d loop devices backed by %s", n, img)
	}
	if err := b.sb.Destroy(context.Background()); err != nil {
		t.Errorf("Destroy after Cleanup: %v", err)
	}
}
