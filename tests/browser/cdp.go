package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// message is one Chrome DevTools Protocol frame: a command we send (ID,
// Method, Params), its response (ID, Result or Error) or an event (Method,
// Params). SessionID routes it to the page we attached to.
type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *protocolError  `json:"error,omitempty"`
}

type protocolError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// devtools speaks the protocol over --remote-debugging-pipe: Chromium reads
// commands from its fd 3 and writes responses and events to its fd 4, each a
// JSON text ended by a NUL byte. One goroutine decodes what Chromium writes;
// everything else runs on the caller's goroutine, so events are handled in
// the order they arrived and need no locking.
type devtools struct {
	w        io.Writer
	incoming chan message
	readErr  error // set before incoming is closed
	nextID   int64
	onEvent  func(message)
}

func newDevtools(w io.Writer, r io.Reader, onEvent func(message)) *devtools {
	d := &devtools{w: w, incoming: make(chan message, 64), onEvent: onEvent}
	go d.read(bufio.NewReader(r))
	return d
}

func (d *devtools) read(r *bufio.Reader) {
	defer close(d.incoming)
	for {
		frame, err := r.ReadBytes(0)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				d.readErr = err
			}
			return
		}
		var m message
		if err := json.Unmarshal(frame[:len(frame)-1], &m); err != nil {
			d.readErr = fmt.Errorf("decoding a devtools message: %w", err)
			return
		}
		d.incoming <- m
	}
}

// receive returns the next message, or an error when ctx ends or Chromium
// closed its end of the pipe (it exited).
func (d *devtools) receive(ctx context.Context) (message, error) {
	select {
	case m, ok := <-d.incoming:
		if !ok {
			if d.readErr != nil {
				return message{}, d.readErr
			}
			return message{}, errors.New("chromium closed the devtools pipe (it exited)")
		}
		return m, nil
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// call sends method with params to session ("" is the browser itself) and
// decodes the response's result into result (nil discards it). Events that
// arrive meanwhile go to onEvent.
func (d *devtools) call(ctx context.Context, session, method string, params, result any) error {
	d.nextID++
	id := d.nextID
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: encoding params: %w", method, err)
	}
	frame, err := json.Marshal(message{ID: id, Method: method, Params: raw, SessionID: session})
	if err != nil {
		return fmt.Errorf("%s: encoding the command: %w", method, err)
	}
	if _, err := d.w.Write(append(frame, 0)); err != nil {
		return fmt.Errorf("%s: writing to chromium: %w", method, err)
	}
	for {
		m, err := d.receive(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID != id {
			if m.Method != "" {
				d.onEvent(m)
			}
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: chromium answered %d %s", method, m.Error.Code, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: decoding the result: %w", method, err)
		}
		return nil
	}
}

// waitEvent returns once an event named method arrives for session, handing
// every event (that one included) to onEvent.
func (d *devtools) waitEvent(ctx context.Context, session, method string) error {
	for {
		m, err := d.receive(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
		if m.Method == "" {
			continue
		}
		d.onEvent(m)
		if m.Method == method && m.SessionID == session {
			return nil
		}
	}
}

// pump waits for the next message and hands it to onEvent when it is an
// event (a response nobody waits for is dropped).
func (d *devtools) pump(ctx context.Context) error {
	m, err := d.receive(ctx)
	if err != nil {
		return err
	}
	if m.Method != "" {
		d.onEvent(m)
	}
	return nil
}

// drain hands the events already received to onEvent without waiting.
func (d *devtools) drain() {
	for {
		select {
		case m, ok := <-d.incoming:
			if !ok {
				return
			}
			if m.Method != "" {
				d.onEvent(m)
			}
		default:
			return
		}
	}
}
