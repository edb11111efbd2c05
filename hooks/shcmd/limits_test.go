package shcmd

import (
	"strings"
	"testing"
	"time"
)

// TestCommandsPathological checks that inputs built to be slow (deep
// nesting, long chains, brace bombs, recursion) are analysed quickly.
func TestCommandsPathological(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("(", 30000), strings.Repeat("{", 30000), strings.Repeat("$(", 20000), strings.Repeat("$((", 15000),
		strings.Repeat("echo x | ", 28000) + "sh", strings.Repeat("ls;", 80000), strings.Repeat("echo $(ls) ", 20000),
		strings.Repeat("f(){ f; f; };", 1000) + "f", strings.Repeat("eval ", 50000), strings.Repeat("{a,b}", 50000),
		strings.Repeat("{a,b} ", 40000), strings.Repeat("parallel ", 100) + "x ::: " + strings.Repeat("a ", 60),
		strings.Repeat("bash -c ", 5000) + "x", strings.Repeat("a=(", 20000), strings.Repeat("${a:-", 15000),
		strings.Repeat("f(){ f \"$@\" \"$@\"; };", 10000) + "f a b c", "echo {1..999999999}",
		"cat <<EOF | sh\n" + strings.Repeat("ls\n", 80000) + "EOF\n",
		"a=xy; " + strings.Repeat("a+=$a$a; ", 60) + "echo $a", "a=xy; " + strings.Repeat("a=$a$a; ", 60) + "echo $a",
		"a=$(echo xx); " + strings.Repeat("a=$(echo $a$a); ", 60),
	} {
		start := time.Now()
		got := Commands(s)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%.40q…: %v", s, d)
		}
		if len(got) > DefaultMaxCommands+1 {
			t.Errorf("%.40q…: %d commands", s, len(got))
		}
	}
}

// BenchmarkCommands measures the analysis of a typical agent command.
func BenchmarkCommands(b *testing.B) {
	p := NewParser(nil)
	src := "cd /workspace/app && timeout 60 npm test -- --runInBand 2>&1 | tail -n 50"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Commands(src)
	}
}
