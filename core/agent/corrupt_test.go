package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/core/agent"
	"github.com/harnessd/harnessd/store"
)

// TestCorruptRunRecord: a run record that does not parse (a damaged
// store) is left out, with a warning, instead of stopping the daemon's
// start (the controller's sweep) and every listing of its session's runs.
func TestCorruptRunRecord(t *testing.T) {
	dir := t.TempDir()
	mark := "corrupt-" + filepath.Base(dir)
	cfg := baseConfig(dir, mark)
	td := startDaemon(t, cfg, mark)
	session := newSession(t, td)
	td.shutdown()

	st, err := store.Open(filepath.Join(dir, "harnessd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(agent.Info{ID: "rgood", Session: session, State: agent.StateEnded})
	for id, rec := range map[string][]byte{"rgood": good, "rbad": []byte("{not json")} {
		if err := <-st.PutRun(context.Background(), session, id, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	td = startDaemon(t, cfg, mark) // fails (t.Fatal) if the start refuses
	runs, err := td.cl.SessionRuns(context.Background(), session)
	if err != nil {
		t.Fatalf("the session's runs: %v", err)
	}
	if len(runs) != 1 || runs[0].ID != "rgood" {
		t.Fatalf("the session's runs: %+v, want rgood alone", runs)
	}
}
