package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Eval runs a classic BPF seccomp program (of the instructions this
// package and the git guard's filter assemble: absolute word loads,
// JEQ/JGE/JSET against constants, RET constant) over one seccomp_data
// for the call nr with args, the way the kernel does, and returns its
// action. It is how the tests check a program's decisions call by call.
func Eval(prog []unix.SockFilter, arch, nr uint32, args ...uint64) (uint32, error) {
	if len(args) > 6 {
		return 0, fmt.Errorf("seccomp: %d arguments", len(args))
	}
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[offArg0+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		next := func(c bool) int {
			if c {
				return int(in.Jt)
			}
			return int(in.Jf)
		}
		switch in.Code {
		case ld:
			if in.K > uint32(len(data))-4 {
				return 0, fmt.Errorf("seccomp: pc %d loads past seccomp_data (%d)", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case jeq:
			pc += next(acc == in.K)
		case jge:
			pc += next(acc >= in.K)
		case jset:
			pc += next(acc&in.K != 0)
		case ret:
			return in.K, nil
		default:
			return 0, fmt.Errorf("seccomp: pc %d: unknown instruction %#x", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("seccomp: the program fell off its end")
}
