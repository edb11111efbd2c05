package config

import (
	"reflect"
	"strings"
)

// Changed lists the settings (as dotted harness.toml keys) whose values
// differ between a and b, in the order Config declares them.
func Changed(a, b Config) []string {
	var out []string
	changed(reflect.ValueOf(a), reflect.ValueOf(b), "", &out)
	return out
}

func changed(a, b reflect.Value, prefix string, out *[]string) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		av, bv := a.Field(i), b.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[Duration]() {
			changed(av, bv, key, out)
			continue
		}
		if !reflect.DeepEqual(av.Interface(), bv.Interface()) {
			*out = append(*out, key)
		}
	}
}

// restartOnly are the settings a running daemon cannot take: where it
// listens and keeps its data, how its store is opened, and the sandbox
// settings (its warm pool holds sandboxes already made with them, and a
// session must not get old or new limits by the luck of a pool hit). A key
// is restart-only if it is listed or lies in a listed table.
var restartOnly = []string{"daemon.socket", "daemon.data_dir", "daemon.heap_floor_mb", "store.path", "store.durability", "sandbox"}

// RestartOnly reports whether a changed key takes effect only after a
// restart.
func RestartOnly(key string) bool {
	for _, k := range restartOnly {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}
