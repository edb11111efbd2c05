package hooks

import (
	"fmt"
	"unicode/utf8"
)

// glob reports whether the whole of s matches pattern: * is any run of
// characters ("/" included), ? one character, [abc], [a-z], [!a-z] and
// [^a-z] a class, and \ quotes the next character. It runs in
// O(len(s)*len(pattern)) at worst.
func glob(pattern, s string) (bool, error) {
	var star, starS = -1, 0
	p, i := 0, 0
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				star, starS = p, i
				p++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[i:])
				p++
				i += n
				continue
			case '[':
				r, n := utf8.DecodeRuneInString(s[i:])
				ok, end, err := matchClass(pattern, p, r)
				if err != nil {
					return false, err
				}
				if ok {
					p = end
					i += n
					continue
				}
			case '\\':
				if p+1 < len(pattern) && pattern[p+1] == s[i] {
					p += 2
					i++
					continue
				}
			default:
				if pattern[p] == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if star < 0 {
			return false, checkRest(pattern, p)
		}
		p = star + 1
		starS++
		i = starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	if p == len(pattern) {
		return true, nil
	}
	return false, checkRest(pattern, p)
}

// checkRest reports a malformed class in the unread part of a pattern, so
// a bad pattern fails whatever it is matched against.
func checkRest(pattern string, p int) error {
	for ; p < len(pattern); p++ {
		switch pattern[p] {
		case '\\':
			p++
		case '[':
			_, end, err := matchClass(pattern, p, 0)
			if err != nil {
				return err
			}
			p = end - 1
		}
	}
	return nil
}

// matchClass matches r against the class at pattern[p] ('['), returning where
// the class ends.
func matchClass(pattern string, p int, r rune) (ok bool, end int, err error) {
	i := p + 1
	neg := false
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		neg = true
		i++
	}
	first := true
	for {
		if i >= len(pattern) {
			return false, 0, fmt.Errorf("bad glob %q: unclosed [", pattern)
		}
		if pattern[i] == ']' && !first {
			i++
			break
		}
		first = false
		lo, n := utf8.DecodeRuneInString(pattern[i:])
		if lo == '\\' && i+1 < len(pattern) {
			i++
			lo, n = utf8.DecodeRuneInString(pattern[i:])
		}
		i += n
		hi := lo
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			i++
			hi, n = utf8.DecodeRuneInString(pattern[i:])
			if hi == '\\' && i+1 < len(pattern) {
				i++
				hi, n = utf8.DecodeRuneInString(pattern[i:])
			}
			i += n
		}
		if lo <= r && r <= hi {
			ok = true
		}
	}
	return ok != neg, i, nil
}
