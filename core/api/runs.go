package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/harnessd/harnessd/core/agent"
)

// POST /v1/sessions/{id}/runs {agent, task, limits}: start an agent run;
// 201 with the run, 409 if one is running in the session.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	if !s.runsAvailable(w, r) {
		return
	}
	var req agent.Request
	if !s.decodeJSON(w, r, &req, false) {
		return
	}
	info, err := s.opts.Runs.Start(r.Context(), r.PathValue("id"), req)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+info.ID)
	writeJSON(w, http.StatusCreated, info)
}

// GET /v1/runs/{id}: a run, running or ended.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	if !s.runsAvailable(w, r) {
		return
	}
	info, err := s.opts.Runs.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// RunList is the body of GET /v1/sessions/{id}/runs.
type RunList struct {
	Runs []agent.Info `json:"runs"`
}

// GET /v1/sessions/{id}/runs: a session's runs (sub-runs too), oldest
// first, from before a restart too.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	if !s.runsAvailable(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := s.d.Exists(r.Context(), id); err != nil {
		s.failErr(w, r, err)
		return
	}
	runs, err := s.opts.Runs.List(r.Context(), id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if runs == nil {
		runs = []agent.Info{}
	}
	writeJSON(w, http.StatusOK, RunList{Runs: runs})
}

// DELETE /v1/runs/{id}: stop a run; answers with the run once it has
// ended (run_ended recorded, its plugin killed).
func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	if !s.runsAvailable(w, r) {
		return
	}
	info, err := s.opts.Runs.Stop(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) runsAvailable(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Runs == nil {
		s.fail(w, r, http.StatusNotImplemented, "not_implemented", "this server drives no agent runs")
		return false
	}
	return true
}

// StartRun starts an agent run in a session.
func (c *Client) StartRun(ctx context.Context, session string, req agent.Request) (agent.Info, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return agent.Info{}, err
	}
	var info agent.Info
	err = c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(session)+"/runs", body, &info)
	return info, err
}

// Run returns a run.
func (c *Client) Run(ctx context.Context, id string) (agent.Info, error) {
	var info agent.Info
	err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &info)
	return info, err
}

// StopRun stops a run and returns it as it ended.
func (c *Client) StopRun(ctx context.Context, id string) (agent.Info, error) {
	var info agent.Info
	err := c.do(ctx, http.MethodDelete, "/v1/runs/"+url.PathEscape(id), nil, &info)
	return info, err
}

// SessionRuns returns a session's runs, oldest first.
func (c *Client) SessionRuns(ctx context.Context, session string) ([]agent.Info, error) {
	var list RunList
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(session)+"/runs", nil, &list)
	return list.Runs, err
}
