package workers

// The server side of a tail's WebSocket (RFC 6455), as much of it as a
// tail needs: text messages out, the client's messages in, pings answered,
// a close answered. Written here rather than taken from a library because
// the libraries refuse what wrangler sends: its first message ({"debug":
// false}) goes out unmasked (ws's send with mask: false), which RFC 6455
// says a server must refuse and Cloudflare's tail accepts. So frames from
// the client are read masked or not.

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	wsOpContinuation = 0x0
	wsOpText         = 0x1
	wsOpBinary       = 0x2
	wsOpClose        = 0x8
	wsOpPing         = 0x9
	wsOpPong         = 0xA

	// wsMaxMessage bounds what a client may send: a tail's client sends
	// only its settings.
	wsMaxMessage = 1 << 20
	// wsWriteTimeout bounds one frame's write to a client that stopped
	// reading.
	wsWriteTimeout = 10 * time.Second
	// wsAcceptGUID is RFC 6455's key suffix for Sec-WebSocket-Accept.
	wsAcceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
)

// wsConn is one accepted WebSocket.
type wsConn struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex // one frame written at a time (messages, pongs, close)
}

// errWSHandshake is a request that is not a WebSocket handshake for
// protocol; the handshake answers it with status.
type errWSHandshake struct {
	status int
	msg    string
}

func (e *errWSHandshake) Error() string { return e.msg }

// acceptWebSocket completes the handshake of r, which must ask for the
// subprotocol protocol, and takes over its connection.
func acceptWebSocket(w http.ResponseWriter, r *http.Request, protocol string) (*wsConn, error) {
	if !headerHasToken(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return nil, &errWSHandshake{http.StatusBadRequest, "a tail is a WebSocket: send Connection: Upgrade and Upgrade: websocket"}
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return nil, &errWSHandshake{http.StatusUpgradeRequired, "WebSocket version 13 only"}
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if key == "" {
		return nil, &errWSHandshake{http.StatusBadRequest, "Sec-WebSocket-Key is missing"}
	}
	if !headerHasToken(r.Header, "Sec-WebSocket-Protocol", protocol) {
		return nil, &errWSHandshake{http.StatusBadRequest, fmt.Sprintf("a tail's WebSocket takes the subprotocol %s (Sec-WebSocket-Protocol)", protocol)}
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("tail: take over the connection: %w", err)
	}
	sum := sha1.Sum([]byte(key + wsAcceptGUID))
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n" +
		"Sec-WebSocket-Protocol: " + protocol + "\r\n\r\n"
	_ = conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	if _, err := io.WriteString(conn, resp); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("tail: handshake: %w", err)
	}
	return &wsConn{conn: conn, br: brw.Reader}, nil
}

// headerHasToken says whether one of h's name values, split at commas,
// is token (case-insensitive).
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// writeFrame writes one unfragmented frame (servers never mask).
func (c *wsConn) writeFrame(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	head := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		head = append(head, byte(n))
	case n <= 0xFFFF:
		head = append(head, 126, 0, 0)
		binary.BigEndian.PutUint16(head[2:], uint16(n))
	default:
		head = append(head, 127, 0, 0, 0, 0, 0, 0, 0, 0)
		binary.BigEndian.PutUint64(head[2:], uint64(n))
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	if _, err := c.conn.Write(append(head, payload...)); err != nil {
		return err
	}
	return nil
}

// WriteText sends one text message.
func (c *wsConn) WriteText(msg []byte) error { return c.writeFrame(wsOpText, msg) }

// Close sends a normal close and closes the connection.
func (c *wsConn) Close() error {
	_ = c.writeFrame(wsOpClose, []byte{0x03, 0xE8}) // 1000: normal closure
	return c.conn.Close()
}

// ReadMessage returns the client's next text or binary message, answering
// pings and a close on the way; io.EOF is the client's close.
func (c *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	for {
		fin, op, payload, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case wsOpPing:
			if err := c.writeFrame(wsOpPong, payload); err != nil {
				return nil, err
			}
			continue
		case wsOpPong:
			continue
		case wsOpClose:
			_ = c.writeFrame(wsOpClose, payload) // echo the client's status
			return nil, io.EOF
		case wsOpText, wsOpBinary, wsOpContinuation:
		default:
			return nil, fmt.Errorf("websocket: unknown opcode %#x", op)
		}
		if len(msg)+len(payload) > wsMaxMessage {
			return nil, errors.New("websocket: message too large")
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// readFrame reads one frame, unmasking it when the client masked it.
func (c *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var head [2]byte
	if _, err = io.ReadFull(c.br, head[:]); err != nil {
		return
	}
	fin, op = head[0]&0x80 != 0, head[0]&0x0F
	masked := head[1]&0x80 != 0
	n := uint64(head[1] & 0x7F)
	switch n {
	case 126:
		var ext [2]byte
		if _, err = io.ReadFull(c.br, ext[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err = io.ReadFull(c.br, ext[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > wsMaxMessage {
		err = errors.New("websocket: frame too large")
		return
	}
	var mask [4]byte
	if masked {
		if _, err = io.ReadFull(c.br, mask[:]); err != nil {
			return
		}
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(c.br, payload); err != nil {
		return
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return
}
