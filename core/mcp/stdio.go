package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine is the longest message LineTransport reads; a longer line is
// answered with an error and skipped.
const MaxLine = 16 << 20

// LineTransport is MCP's stdio transport, one JSON-RPC message a line,
// made to survive its input: the SDK's own (sdk.IOTransport) ends the
// session at the first byte that is not JSON, and with it the default
// session and every command in flight. Here a line that is not a
// message is answered with a JSON-RPC error (parse error, or invalid
// request with its id when it has one) and the session goes on.
//
// At the end of its input it waits until every request read has been
// answered, so a client that writes its requests and closes stdin still
// gets its answers.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements sdk.Transport. The connection's reader goroutine
// ends at the end of In; like the SDK's stdio transport, it cannot be
// stopped while blocked in a read of stdin.
func (t *LineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.Out, in: make(chan []byte), eof: make(chan error, 1), closed: make(chan struct{}), open: map[string]bool{}}
	c.cond = sync.NewCond(&c.mu)
	go c.read(t.In)
	return c, nil
}

type lineConn struct {
	out    io.Writer
	wmu    sync.Mutex // one message a line, never interleaved
	in     chan []byte
	eof    chan error
	closed chan struct{}
	once   sync.Once

	mu   sync.Mutex
	cond *sync.Cond
	open map[string]bool // ids of requests read and not yet answered
	done bool
}

func (c *lineConn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			select {
			case c.in <- line:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.eof <- err
			return
		}
	}
}

// readLine reads one line of at most MaxLine bytes. Of a longer one it
// returns tooLong, then the line's first and last bytes, where its id may
// be (tooLongID), so that the client's call gets its error.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line, tail []byte
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case over:
			tail = append(tail, frag...)
			if len(tail) > 2*idTail {
				tail = append(tail[:0], tail[len(tail)-idTail:]...)
			}
		case len(line)+len(frag) <= MaxLine:
			line = append(line, frag...)
		default:
			over = true
			head := append(line, frag...)
			tail = append(tail, head[max(0, len(head)-idTail):]...)
			line = append(append([]byte(nil), tooLong...), head[:min(len(head), idHead)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			line = append(append(line, 0), tail[max(0, len(tail)-idTail):]...)
			return line, err
		}
		return bytes.TrimSpace(line), err
	}
}

var tooLong = []byte("\x00line too long")

// How much of a too long line's start and end is kept to find its id.
const (
	idHead = 4 << 10
	idTail = 256
)

// tooLongID finds the id of a message too long to read from what was
// kept of it (tooLong, its head, NUL, its tail): a top-level "id" before
// the head ends, or "id" as the last member (where JSON.stringify puts
// it when the message is built as {...request, jsonrpc, id}); nil if
// neither is there.
func tooLongID(kept []byte) json.RawMessage {
	kept = kept[len(tooLong):]
	head, tail, _ := bytes.Cut(kept, []byte{0})
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			if k == "id" {
				var id json.RawMessage
				if dec.Decode(&id) == nil && validID(id) {
					return id
				}
				break
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
	}
	if m := lastID.FindSubmatch(tail); m != nil && validID(m[1]) {
		return json.RawMessage(m[1])
	}
	return nil
}

// lastID is an "id" member that ends an object.
var lastID = regexp.MustCompile(`[{,]\s*"id"\s*:\s*(-?[0-9]{1,19}|"(?:[^"\\\x00-\x1f]){0,200}")\s*}\s*$`)

// validID reports whether raw is an id JSON-RPC allows (a number or a
// string).
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return false
	}
	_, err := jsonrpc.MakeID(v)
	return err == nil
}

// Read implements sdk.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case line := <-c.in:
			msg, reply := ParseLine(line)
			if reply != nil {
				if err := c.writeRaw(reply); err != nil {
					return nil, err
				}
				continue
			}
			c.track(msg)
			return msg, nil
		case err := <-c.eof:
			c.drain()
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("mcp stdin: %w", err)
		}
	}
}

// track remembers a request until it is answered; a cancellation
// forgets it (the SDK may never answer a cancelled call).
func (c *lineConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.ID.IsValid() {
		c.open[idKey(req.ID)] = true
		return
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				delete(c.open, idKey(id))
				c.cond.Broadcast()
			}
		}
	}
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// drain waits until every request read has been answered, or Close.
func (c *lineConn) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.open) > 0 && !c.done {
		c.cond.Wait()
	}
}

// Write implements sdk.Connection.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode: %w", err)
	}
	if err := c.writeRaw(data); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.open, idKey(resp.ID))
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return nil
}

func (c *lineConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.out.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("mcp stdout: %w", err)
	}
	return nil
}

// Close implements sdk.Connection; it may be called more than once.
func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.mu.Lock()
		c.done = true
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	return nil
}

// SessionID implements sdk.Connection: stdio has no session id.
func (c *lineConn) SessionID() string { return "" }

// ParseLine decodes one line of input. It returns the message, or, for
// a line that is not one, the JSON-RPC error reply to send instead.
// Exactly one of the two is non-nil; it never panics (fuzzed).
func ParseLine(line []byte) (jsonrpc.Message, []byte) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported; send one message a line")
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil && msg != nil {
		return msg, nil
	}
	if bytes.HasPrefix(line, tooLong) {
		return nil, errorReply(tooLongID(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("message over %d bytes; skipped (put large files in the workspace and pass their paths)", MaxLine))
	}
	// Valid JSON with an id is an invalid request the client can match
	// to its call; anything else is a parse error (id null).
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil {
		var v any
		if len(probe.ID) > 0 && json.Unmarshal(probe.ID, &v) == nil {
			if _, err := jsonrpc.MakeID(v); err == nil && v != nil {
				return nil, errorReply(probe.ID, jsonrpc.CodeInvalidRequest, "invalid request: "+errText(err))
			}
		}
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+errText(err))
	}
	return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: not a JSON-RPC message; send one JSON object a line")
}

func errText(err error) string {
	if err == nil {
		return "not a JSON-RPC message"
	}
	return err.Error()
}

func errorReply(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	return b
}
