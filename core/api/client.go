package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/harnessd/harnessd/core/daemon"
	"github.com/harnessd/harnessd/core/event"
	"github.com/harnessd/harnessd/core/live"
)

// ErrNotRunning: nothing answers on the socket.
var ErrNotRunning = errors.New("harnessd is not running")

// Error is an error reply from the API.
type Error struct {
	Status  int    // HTTP status
	Code    string // e.g. "not_found", "session_ended"
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code) }

// NotRunningError says the socket could not be reached, and which.
type NotRunningError struct {
	Socket string
	Err    error
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("is harnessd serve running? socket: %s: %v", e.Socket, e.Err)
}

func (e *NotRunningError) Unwrap() []error { return []error{ErrNotRunning, e.Err} }

// Client speaks the API over a unix socket. It is safe for concurrent use.
type Client struct {
	socket string
	hc     *http.Client // the event streams, and everything for a client of no socket (in-process)
	pool   connPool     // everything else (exchange.go)
	direct bool         // the client dials socket itself (NewClient)
}

// NewClient returns a client for the daemon listening at socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
	}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}, direct: true}
}

// Socket is the socket path the client dials.
func (c *Client) Socket() string { return c.socket }

// Close drops the client's idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	c.pool.closeIdle()
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	status, data, err := c.exchange(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status >= 300 {
		return statusError(method, path, status, data)
	}
	if out == nil {
		return nil
	}
	if ev, ok := out.(*event.Event); ok {
		*ev, err = event.Decode(data)
		return err
	}
	if u, ok := out.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(data)
	}
	return json.Unmarshal(data, out)
}

// send makes a request and turns a connection failure or an error status
// into an error.
func (c *Client) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://harnessd"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &NotRunningError{Socket: c.socket, Err: op.Err}
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, statusError(method, path, resp.StatusCode, data)
	}
	return resp, nil
}

// CreateSession starts a session.
func (c *Client) CreateSession(ctx context.Context, req daemon.CreateRequest) (daemon.Info, error) {
	body, _ := json.Marshal(req)
	var info daemon.Info
	err := c.do(ctx, http.MethodPost, "/v1/sessions", body, &info)
	return info, err
}

// Sessions lists every session.
func (c *Client) Sessions(ctx context.Context) ([]daemon.Info, error) {
	var l SessionList
	err := c.do(ctx, http.MethodGet, "/v1/sessions", nil, &l)
	return l.Sessions, err
}

// Profiles returns the profiles a session may be created with.
func (c *Client) Profiles(ctx context.Context) ([]daemon.Profile, error) {
	var l ProfileList
	err := c.do(ctx, http.MethodGet, "/v1/profiles", nil, &l)
	return l.Profiles, err
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (daemon.Info, error) {
	var info daemon.Info
	err := c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &info)
	return info, err
}

// DeleteSession ends a session; with purge, its history goes too.
func (c *Client) DeleteSession(ctx context.Context, id string, purge bool) error {
	path := "/v1/sessions/" + url.PathEscape(id)
	if purge {
		path += "?purge=true"
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil)
}

// Act sends one action (a cmd_run, message, finish or delegate payload)
// and returns the event that answers it.
func (c *Client) Act(ctx context.Context, id string, src event.Source, p event.Payload) (event.Event, error) {
	body, err := event.Event{Source: src, Payload: p}.MarshalJSON()
	if err != nil {
		return event.Event{}, err
	}
	var ev event.Event
	err = c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/actions", body, &ev)
	return ev, err
}

// Events calls fn with the session's events after seq after; with follow,
// it keeps going until the session ends or ctx does.
func (c *Client) Events(ctx context.Context, id string, after uint64, follow bool, fn func(event.Event) error) error {
	path := "/v1/sessions/" + url.PathEscape(id) + "/events?after=" + strconv.FormatUint(after, 10)
	if follow {
		path += "&follow=true"
	}
	return c.stream(ctx, id, path, nil, fn, nil)
}

// Watch follows the session's events after seq after, as Events does,
// and the output of its commands as it is printed: progress gets each
// chunk (live.Chunk) between the events. started, if not nil, is called
// once the daemon is watching: an action sent after that has all its
// output delivered (unless this client falls behind, which each chunk's
// Lost says).
func (c *Client) Watch(ctx context.Context, id string, after uint64, started func(), fn func(event.Event) error, progress func(live.Chunk) error) error {
	path := "/v1/sessions/" + url.PathEscape(id) + "/events?follow=true&progress=true&after=" + strconv.FormatUint(after, 10)
	return c.stream(ctx, id, path, started, fn, progress)
}

var progressPrefix = []byte(`{"kind":"progress"`)

func (c *Client) stream(ctx context.Context, id, path string, started func(), fn func(event.Event) error, progress func(live.Chunk) error) error {
	resp, err := c.send(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if started != nil {
		started()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"error":`)) {
			var eb errorBody
			if json.Unmarshal(line, &eb) == nil {
				return &Error{Status: http.StatusOK, Code: eb.Error.Code, Message: eb.Error.Message}
			}
		}
		if bytes.HasPrefix(line, progressPrefix) {
			if progress == nil {
				continue
			}
			var ch live.Chunk
			if err := json.Unmarshal(line, &ch); err != nil {
				return fmt.Errorf("events of %s: progress: %w", id, err)
			}
			if err := progress(ch); err != nil {
				return err
			}
			continue
		}
		ev, err := event.Decode(line)
		if err != nil {
			return fmt.Errorf("events of %s: %w", id, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("events of %s: %w", id, err)
	}
	return nil
}

// Output reads lines from..to (1-based, inclusive; to 0: to the end) of a
// stored output.
func (c *Client) Output(ctx context.Context, id string, from, to int) (Page, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from_line", strconv.Itoa(from))
	}
	if to > 0 {
		q.Set("to_line", strconv.Itoa(to))
	}
	path := "/v1/outputs/" + url.PathEscape(id)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p Page
	err := c.do(ctx, http.MethodGet, path, nil, &p)
	return p, err
}

// Health asks the daemon whether it is up.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, "/healthz", nil, &h)
	return h, err
}

// Reply gives the daemon a model's reply to parse and carry out.
func (c *Client) Reply(ctx context.Context, id string, r daemon.Reply) (daemon.ReplyResult, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return daemon.ReplyResult{}, err
	}
	var res daemon.ReplyResult
	err = c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/replies", body, &res)
	return res, err
}

// Approvals lists the actions waiting for a person.
func (c *Client) Approvals(ctx context.Context) ([]daemon.Approval, error) {
	var l ApprovalList
	err := c.do(ctx, http.MethodGet, "/v1/approvals", nil, &l)
	return l.Approvals, err
}

// Decide approves or denies an action waiting for a person.
func (c *Client) Decide(ctx context.Context, session string, seq uint64, approve bool) error {
	body, _ := json.Marshal(Decision{Approve: approve})
	return c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(session)+"/"+strconv.FormatUint(seq, 10), body, nil)
}
