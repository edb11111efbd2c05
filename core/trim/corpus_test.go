package trim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harnessd/harnessd/core/trim/internal/legacy"
)

// corpusFile is one real tool output from testdata/corpus (see gen.sh
// there) with the lines a developer must see to fix what failed.
type corpusFile struct {
	name string
	data []byte
	must []string
}

func loadCorpus(t testing.TB) []corpusFile {
	t.Helper()
	outs, err := filepath.Glob("testdata/corpus/*.log")
	if err != nil || len(outs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var files []corpusFile
	for _, out := range outs {
		name := strings.TrimSuffix(filepath.Base(out), ".log")
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		mustText, err := os.ReadFile(strings.TrimSuffix(out, ".log") + ".must")
		if err != nil {
			t.Fatalf("%s: every output needs its .must file: %v", name, err)
		}
		f := corpusFile{name: name, data: data}
		for _, l := range strings.Split(string(mustText), "\n") {
			if l == "" || strings.HasPrefix(l, "# ") {
				continue
			}
			if !bytes.Contains(data, []byte(l)) {
				t.Fatalf("%s.must: %q is not in the output", name, l)
			}
			f.must = append(f.must, l)
		}
		files = append(files, f)
	}
	return files
}

// kept counts the must-see lines found whole in text.
func kept(text string, must []string) (n int, missing []string) {
	for _, m := range must {
		if strings.Contains(text, m) {
			n++
		} else {
			missing = append(missing, m)
		}
	}
	return n, missing
}

// TestCorpus: on every real output, the default observation holds every
// must-see line, stays within the budget, and its placeholder is exact.
func TestCorpus(t *testing.T) {
	for _, f := range loadCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			cfg := DefaultConfig()
			r := feed(t, cfg, f.data, []int{4096}, testID)
			if n := utf8.RuneCountInString(r.Text); n > cfg.MaxChars {
				t.Errorf("%d characters, budget %d", n, cfg.MaxChars)
			}
			if _, missing := kept(r.Text, f.must); len(missing) > 0 {
				t.Errorf("must-see lines lost: %q\n%s", missing, r.Text)
			}
			verify(t, f.data, r)
			// Chunking changes nothing.
			if r2 := feed(t, cfg, f.data, []int{1, 7, 300}, testID); r2 != r {
				t.Errorf("chunked result differs")
			}
		})
	}
}

// headTail is OpenHands' cut: the first and last halves of the budget in
// characters, a notice between them (its length taken from the budget).
func headTail(data []byte, budget int) string {
	const notice = "\n<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>\n"
	r := []rune(string(data))
	if len(r) <= budget {
		return string(r)
	}
	half := (budget - len(notice)) / 2
	return string(r[:half]) + notice + string(r[len(r)-half:])
}

func legacyText(data []byte) string {
	tr := legacy.New(legacy.DefaultConfig(), nil)
	tr.Write(data)
	return tr.Result(testID).Text
}

// TestCorpusReport prints, per corpus file, the must-see lines kept and
// the characters used by the new trimmer, by the trimmer it replaced and
// by a head/tail cut at the same budget. Run it with -v.
func TestCorpusReport(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %6s %8s | %-14s | %-14s | %-14s\n", "output", "lines", "chars", "new (8000)", "old trimmer", "head/tail 8000")
	fmt.Fprintf(&b, "%-12s %6s %8s | %-14s | %-14s | %-14s\n", "", "", "", "must  chars", "must  chars", "must  chars")
	var sum [3]int
	total := 0
	for _, f := range loadCorpus(t) {
		texts := [3]string{
			feed(t, DefaultConfig(), f.data, nil, testID).Text,
			legacyText(f.data),
			headTail(f.data, DefaultMaxChars),
		}
		fmt.Fprintf(&b, "%-12s %6d %8d", f.name, bytes.Count(f.data, []byte{'\n'}), utf8.RuneCount(f.data))
		for i, text := range texts {
			n, _ := kept(text, f.must)
			sum[i] += n
			fmt.Fprintf(&b, " | %2d/%-2d %7d", n, len(f.must), utf8.RuneCountInString(text))
		}
		total += len(f.must)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%-28s", "all")
	for _, n := range sum {
		fmt.Fprintf(&b, " | %3d/%-3d %3.0f%%  ", n, total, 100*float64(n)/float64(total))
	}
	t.Log(b.String())
}
