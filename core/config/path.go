package config

import (
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// A path names a value in a document: the keys that lead to it, and the
// index of each array element on the way. Its String is the key as error
// messages show it, "agents.a.env" or "hooks[1].args".
type path []step

// A step of a path: a key, or an element of an array.
type step struct {
	key   string // the key, if !elem
	index int    // the 0-based index, if elem
	elem  bool
}

// child returns the path of key k in the table at p. It never shares p's
// backing array, so siblings do not overwrite each other.
func (p path) child(k string) path { return append(p[:len(p):len(p)], step{key: k}) }

// elem returns the path of element i of the array at p.
func (p path) elem(i int) path { return append(p[:len(p):len(p)], step{index: i, elem: true}) }

// key returns p without its array indices, as the TOML library names the
// key: hooks[1].args is hooks.args.
func (p path) key() toml.Key {
	k := make(toml.Key, 0, len(p))
	for _, s := range p {
		if !s.elem {
			k = append(k, s.key)
		}
	}
	return k
}

// String returns the key as toml.Key.String does (quoting the parts that
// need it), with "[i]" after each array that the path goes into.
func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		s.write(&b, i)
	}
	return b.String()
}

// prefixes returns, for each n, p[:n+1].String() and p[:n+1].key().String():
// each is a prefix of the next, so both lists cost one string each.
func (p path) prefixes() (full, plain []string) {
	var f, k strings.Builder
	fend := make([]int, len(p))
	kend := make([]int, len(p))
	nk := 0
	for i, s := range p {
		s.write(&f, i)
		if !s.elem {
			s.write(&k, nk)
			nk++
		}
		fend[i], kend[i] = f.Len(), k.Len()
	}
	fs, ks := f.String(), k.String()
	full, plain = make([]string, len(p)), make([]string, len(p))
	for i := range p {
		full[i], plain[i] = fs[:fend[i]], ks[:kend[i]]
	}
	return full, plain
}

// write writes s, the i-th step of a path, as String shows it.
func (s step) write(b *strings.Builder, i int) {
	if s.elem {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(s.index))
		b.WriteByte(']')
		return
	}
	if i > 0 {
		b.WriteByte('.')
	}
	b.WriteString(toml.Key{s.key}.String())
}
