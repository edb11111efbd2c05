package config

import (
	"slices"
	"testing"
	"time"
)

func TestChanged(t *testing.T) {
	a, b := Default(), Default()
	if got := Changed(a, b); len(got) != 0 {
		t.Fatalf("defaults differ: %v", got)
	}
	b.Daemon.MaxSessions++
	b.Terminal.SoftTimeout = Duration{3 * time.Second}
	b.Daemon.AllowUIDs = []int{1000}
	b.Store.Durability = DurabilityBatch
	got := Changed(a, b)
	want := []string{"daemon.allow_uids", "daemon.max_sessions", "terminal.soft_timeout", "store.durability"}
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("Changed = %v, missing %s", got, k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Changed = %v, want %v", got, want)
	}
	if !RestartOnly("store.durability") || !RestartOnly("daemon.socket") || RestartOnly("daemon.max_sessions") || RestartOnly("storex") || !RestartOnly("sandbox.memory_mb") {
		t.Error("RestartOnly misclassifies")
	}
}
