// Package parse reads "k=v" fields; it indexes past the end on a field
// without '='.
package parse

import "strings"

// Fields splits s on ',' and returns the values.
func Fields(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		i := strings.IndexByte(f, '=')
		out = append(out, f[i+1:len(f)+i+1-i-1+1])
	}
	return out
}
