package gitlsm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// ErrUnavailable wraps every reason Load cannot enforce the rule.
var ErrUnavailable = errors.New("BPF LSM not available")

// MaxEntries bounds the rule's entries: one per guarded user namespace
// and filesystem.
const MaxEntries = 16384

// hook is one LSM hook the rule is attached to: where its directory and
// new dentry are among the hook's arguments, and whether the dentry may
// already have an inode (rename over an existing name, which is allowed).
type hook struct {
	name        string
	dir, dentry int
	// source is the argument that is the dentry being renamed, for
	// inode_rename (its type decides for .git), else -1.
	source int
	// makesDir: the entry made is a directory (a .git one is allowed).
	makesDir bool
}

// hooks are every hook that makes a directory entry. inode_rename is
// called for the new name; for RENAME_EXCHANGE it is called a second
// time with the two swapped, and both names exist: nothing new appears.
var hooks = []hook{
	{"inode_create", 0, 1, -1, false},
	{"inode_mknod", 0, 1, -1, false},
	{"inode_mkdir", 0, 1, -1, true},
	{"inode_symlink", 0, 1, -1, false},
	{"inode_link", 1, 2, -1, false},
	{"inode_rename", 2, 3, 1, false},
}

// offsets are the byte offsets of what the programs read, from the
// kernel's BTF.
type offsets struct {
	nameLen, namePtr, dInode int16 // struct dentry: d_name.len, d_name.name, d_inode
	iMode, iUID, iSB         int16 // struct inode
	sDev                     int16 // struct super_block
	cred                     int16 // struct task_struct
	userNS                   int16 // struct cred
	inum                     int16 // struct user_namespace: ns.inum
}

// key is the rule map's key: a user namespace and a filesystem.
type key struct {
	UserNS uint32 // the inode number of the task's credentials' user namespace
	Dev    uint32 // a superblock's s_dev, the kernel's encoding (MKDEV)
}

// Rule is the loaded programs and the map that says whom they guard.
type Rule struct {
	m     *ebpf.Map
	progs []*ebpf.Program
	links []link.Link

	mu     sync.Mutex
	closed bool
}

// Load assembles the programs, loads them and attaches one to each hook.
// An error wraps ErrUnavailable and says what is missing.
func Load() (*Rule, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("%w: kernel BTF: %w", ErrUnavailable, err)
	}
	off, err := kernelOffsets(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "git_head_rule",
		Type:       ebpf.Hash,
		KeySize:    8,
		ValueSize:  4,
		MaxEntries: MaxEntries,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: map: %w", ErrUnavailable, err)
	}
	r := &Rule{m: m}
	for _, h := range hooks {
		p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
			Name:         "git_head_" + h.name[len("inode_"):],
			Type:         ebpf.LSM,
			AttachType:   ebpf.AttachLSMMac,
			AttachTo:     h.name,
			Instructions: program(h, off, m.FD()),
			License:      "Dual MIT/GPL", // LSM programs must be GPL-compatible
		}, ebpf.ProgramOptions{KernelTypes: spec})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%w: load %s: %w", ErrUnavailable, h.name, err)
		}
		r.progs = append(r.progs, p)
		l, err := link.AttachLSM(link.LSMOptions{Program: p})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%w: attach %s (is \"bpf\" in the kernel's lsm= list?): %w", ErrUnavailable, h.name, err)
		}
		r.links = append(r.links, l)
	}
	return r, nil
}

// headLE and gitLE are "HEAD" and ".git" as little-endian 32-bit
// words, as the programs read a name's first four bytes.
const (
	headLE = 'H' | 'E'<<8 | 'A'<<16 | 'D'<<24
	gitLE  = '.' | 'g'<<8 | 'i'<<16 | 't'<<24
)

// program is the program of hook h, checks ordered cheapest first, since
// it runs on every creation on the host:
//
//	if len(dentry.name) != 4 -> allow
//	name := dentry.name
//	if name == "HEAD":
//		if h renames over an existing HEAD -> allow (git's HEAD.lock)
//	else if name == ".git" and what is made is not a directory:
//		(a .git file or link names a gitdir anywhere: one of the
//		user's old directories with a HEAD, say .git/logs, the reflog
//		of theirs, given objects, refs and a config by the agent)
//	else -> allow
//	owner := rule[current's user namespace, dir's s_dev]; absent -> allow
//	if dir's i_uid == owner -> allow
//	-> EPERM
func program(h hook, o offsets, mapFD int) asm.Instructions {
	const allow, head, check = "allow", "head", "check"
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),                               // r6 = ctx (the hook's arguments, u64 each)
		asm.LoadMem(asm.R7, asm.R6, int16(8*h.dentry), asm.DWord), // r7 = dentry
		asm.LoadMem(asm.R2, asm.R7, o.nameLen, asm.Word),
		asm.JNE.Imm(asm.R2, 4, allow),
		// bpf_probe_read_kernel(fp-8, 4, dentry->d_name.name)
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(asm.RFP, -8, asm.R2, asm.DWord),
		asm.LoadMem(asm.R3, asm.R7, o.namePtr, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -8),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, allow),
		asm.LoadMem(asm.R2, asm.RFP, -8, asm.Word),
		asm.JEq.Imm(asm.R2, headLE, head),
	}
	if h.makesDir {
		ins = append(ins, asm.Ja.Label(allow))
	} else {
		ins = append(ins, asm.JNE.Imm(asm.R2, gitLE, allow))
		if h.source >= 0 {
			ins = append(ins,
				asm.LoadMem(asm.R3, asm.R6, int16(8*h.source), asm.DWord),
				asm.LoadMem(asm.R3, asm.R3, o.dInode, asm.DWord),
				asm.LoadMem(asm.R3, asm.R3, o.iMode, asm.Half),
				asm.And.Imm(asm.R3, unix.S_IFMT),
				asm.JEq.Imm(asm.R3, unix.S_IFDIR, allow),
			)
		}
		ins = append(ins, asm.Ja.Label(check))
	}
	ins = append(ins, asm.Mov.Imm(asm.R0, 0).WithSymbol(head))
	if h.source >= 0 {
		ins = append(ins,
			asm.LoadMem(asm.R2, asm.R7, o.dInode, asm.DWord),
			asm.JNE.Imm(asm.R2, 0, allow),
		)
	}
	ins = append(ins,
		// key at fp-16: {user namespace, s_dev}
		asm.FnGetCurrentTaskBtf.Call().WithSymbol(check),
		asm.LoadMem(asm.R1, asm.R0, o.cred, asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, o.userNS, asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, o.inum, asm.Word),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, int16(8*h.dir), asm.DWord), // r8 = dir
		asm.LoadMem(asm.R1, asm.R8, o.iSB, asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, o.sDev, asm.Word),
		asm.StoreMem(asm.RFP, -12, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, allow),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.R8, o.iUID, asm.Word),
		asm.JEq.Reg(asm.R1, asm.R2, allow),
		asm.Mov.Imm(asm.R0, -int32(unix.EPERM)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(allow),
		asm.Return(),
	)
	return ins
}

// kernelOffsets finds the offsets the programs need in the kernel's BTF,
// checking each member's size.
func kernelOffsets(spec *btf.Spec) (offsets, error) {
	var o offsets
	for _, f := range []struct {
		dst  *int16
		typ  string
		path []string
		size uint32
	}{
		{&o.nameLen, "dentry", []string{"d_name", "len"}, 4},
		{&o.namePtr, "dentry", []string{"d_name", "name"}, 8},
		{&o.dInode, "dentry", []string{"d_inode"}, 8},
		{&o.iMode, "inode", []string{"i_mode"}, 2},
		{&o.iUID, "inode", []string{"i_uid"}, 4},
		{&o.iSB, "inode", []string{"i_sb"}, 8},
		{&o.sDev, "super_block", []string{"s_dev"}, 4},
		{&o.cred, "task_struct", []string{"cred"}, 8},
		{&o.userNS, "cred", []string{"user_ns"}, 8},
		{&o.inum, "user_namespace", []string{"ns", "inum"}, 4},
	} {
		var s *btf.Struct
		if err := spec.TypeByName(f.typ, &s); err != nil {
			return o, fmt.Errorf("kernel BTF: struct %s: %w", f.typ, err)
		}
		var t btf.Type = s
		var at uint32
		for _, name := range f.path {
			m, mOff, ok := member(t, name)
			if !ok {
				return o, fmt.Errorf("kernel BTF: struct %s has no %v", f.typ, f.path)
			}
			t, at = m, at+mOff
		}
		size, err := btf.Sizeof(t)
		if err != nil || uint32(size) != f.size || at > 1<<15-8 {
			return o, fmt.Errorf("kernel BTF: %s.%v: offset %d, size %d (%v), not the %d bytes the rule reads", f.typ, f.path, at, size, err, f.size)
		}
		*f.dst = int16(at)
	}
	return o, nil
}

// member finds name in the struct or union t (through typedefs and
// qualifiers), or in its anonymous members: its type and byte offset.
func member(t btf.Type, name string) (btf.Type, uint32, bool) {
	var ms []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		ms = c.Members
	case *btf.Union:
		ms = c.Members
	default:
		return nil, 0, false
	}
	for _, m := range ms {
		if m.Name == name {
			return m.Type, m.Offset.Bytes(), true
		}
	}
	for _, m := range ms {
		if m.Name != "" {
			continue
		}
		if mt, off, ok := member(m.Type, name); ok {
			return mt, m.Offset.Bytes() + off, true
		}
	}
	return nil, 0, false
}

// Add guards the tasks whose credentials are in user namespace userNS
// (its inode number) on the filesystems devs (device numbers as stat
// gives them): there, only directories owner (a host uid) owns may get a
// new entry named HEAD from them.
func (r *Rule) Add(userNS uint32, devs []uint64, owner uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("gitlsm: rule closed")
	}
	for _, d := range devs {
		if err := r.m.Update(key{userNS, kernelDev(d)}, owner, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("gitlsm: add user namespace %d, device %d:%d: %w", userNS, unix.Major(d), unix.Minor(d), err)
		}
	}
	return nil
}

// Remove forgets what Add said of userNS on devs.
func (r *Rule) Remove(userNS uint32, devs []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, d := range devs {
		r.m.Delete(key{userNS, kernelDev(d)}) // absent: nothing to forget
	}
}

// Len is the number of entries in the rule's map.
func (r *Rule) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0
	}
	n := 0
	var k key
	var v uint32
	for it := r.m.Iterate(); it.Next(&k, &v); {
		n++
	}
	return n
}

// Close detaches the programs and frees them and the map. Safe to call
// more than once.
func (r *Rule) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for _, l := range r.links {
		errs = append(errs, l.Close())
	}
	for _, p := range r.progs {
		errs = append(errs, p.Close())
	}
	errs = append(errs, r.m.Close())
	return errors.Join(errs...)
}

// kernelDev is a device number as stat gives it in the kernel's own
// encoding (MKDEV: major in the top 12 bits of 32, minor in the low 20),
// as super_block.s_dev holds it.
func kernelDev(d uint64) uint32 {
	return unix.Major(d)<<20 | unix.Minor(d)&(1<<20-1)
}

// UserNS is the inode number of the user namespace of process pid.
func UserNS(pid int) (uint32, error) {
	var st unix.Stat_t
	p := fmt.Sprintf("/proc/%d/ns/user", pid)
	if err := unix.Stat(p, &st); err != nil {
		return 0, fmt.Errorf("gitlsm: stat %s: %w", p, err)
	}
	return uint32(st.Ino), nil
}
