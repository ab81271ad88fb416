package queues

// The queues' HTTP API for messages, and pull consumers:
//
//	POST queues/{id}/messages        {body, content_type, delay_seconds}
//	POST queues/{id}/messages/batch  {messages: [...], delay_seconds}
//	POST queues/{id}/messages/pull   {batch_size, visibility_timeout_ms}
//	POST queues/{id}/messages/ack    {acks: [{lease_id}], retries: [{lease_id, delay_seconds}]}
//	POST queues/{id}/purge           {delete_messages_permanently: true}
//	GET  queues/{id}/purge
//
// Sending works on any queue, whatever its consumer (a worker consumer gets
// the messages pushed as from a producer binding). Pulling needs the queue's
// consumer to be of type http_pull, as Cloudflare documents ("enable HTTP
// pull" before pulling; a queue has a push or a pull consumer, not both). A
// pull leases each message it answers for the visibility timeout: the
// message is not pulled again until the lease ends, by an ack (gone), a
// retry (back after its delay) or the timeout (back at once); a message
// retried or timed out more than max_retries times goes to the consumer's
// dead-letter queue, or is dropped, as a push consumer's is.
//
// Documented (the Queues API reference and the pull consumers guide): the
// routes and bodies; the answers' shapes (result.metadata.metrics with
// backlog_count, backlog_bytes and oldest_message_timestamp_ms;
// message_backlog_count, messages [{id, attempts, body, lease_id, metadata,
// timestamp_ms}]; ackCount, retryCount, warnings as a map of lease IDs);
// metadata's CF-Content-Type and CF-sourceMessageSource keys; batch_size at
// most 100; a message of at most 128 KB, a batch of at most 100 messages and
// 256 KB; the visibility timeout at most 12 hours.
// Assumed: a JSON body without content_type is a json message; a bytes or
// v8 message (sent by a Worker) is pulled as its bytes in base64; a lease
// ID the queue does not hold is a warning, not an error; the codes of the
// refusals (11003 as the family's invalid-request code); purge needing
// delete_messages_permanently true, and the purge status's completed being
// the string "true" (the reference types it as a string, without example).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Where a message was sent from, as CF-sourceMessageSource says.
const (
	sourceWorker = "worker"
	sourceAPI    = "api"
)

// Documented limits of the HTTP API.
const (
	maxBatchMessages = 100
	maxBatchBytes    = 256000
	maxPullBatchSize = 100
)

// lease is a pulled message in flight until acked, retried or timed out.
type lease struct {
	queueID string
	msg     *queuedMessage
	until   time.Time
}

func (s *Service) registerMessages() {
	const base = "/client/v4/accounts/{account_id}/queues/{queue_id}"
	s.cf.API("POST "+base+"/messages", cloudflare.AuthAccount, s.qPush)
	s.cf.API("POST "+base+"/messages/batch", cloudflare.AuthAccount, s.qPushBatch)
	s.cf.API("POST "+base+"/messages/pull", cloudflare.AuthAccount, s.qPull)
	s.cf.API("POST "+base+"/messages/ack", cloudflare.AuthAccount, s.qAck)
	s.cf.API("POST "+base+"/purge", cloudflare.AuthAccount, s.qPurge)
	s.cf.API("GET "+base+"/purge", cloudflare.AuthAccount, s.qPurgeStatus)
}

// apiMessage is one message as POST messages and messages/batch take it.
type apiMessage struct {
	Body         json.RawMessage `json:"body"`
	ContentType  *string         `json:"content_type"`
	DelaySeconds *json.Number    `json:"delay_seconds"`
}

// queuedFrom turns an apiMessage into a stored message; fallback is the
// delay when the message names none. field names it in errors.
func queuedFrom(m apiMessage, fallback time.Duration, now time.Time, field string) (*queuedMessage, error) {
	ct := "json"
	if m.ContentType != nil {
		ct = *m.ContentType
	}
	var body []byte
	switch ct {
	case "json":
		if len(m.Body) == 0 {
			return nil, queueInvalid("%s.body is required", field)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Body); err != nil {
			return nil, queueInvalid("%s.body is not JSON", field)
		}
		body = compact.Bytes()
	case "text":
		var text string
		if err := json.Unmarshal(m.Body, &text); err != nil {
			return nil, queueInvalid("%s.body must be a string for content_type text", field)
		}
		body = []byte(text)
	default:
		return nil, queueInvalid("%s.content_type must be \"text\" or \"json\", got %q", field, ct)
	}
	if len(body) > maxMessageBytes {
		return nil, core.NewAPIError(http.StatusRequestEntityTooLarge, 11003,
			fmt.Sprintf("%s is %d bytes; a message may be at most %d bytes", field, len(body), maxMessageBytes))
	}
	delay := fallback
	if m.DelaySeconds != nil {
		d, err := intSetting(field+".delay_seconds", *m.DelaySeconds, 0, maxQueueDeliveryDelay)
		if err != nil {
			return nil, err
		}
		delay = time.Duration(d) * time.Second
	}
	return &queuedMessage{ID: core.NewHexID(), Timestamp: now, ContentType: ct, Source: sourceAPI, Body: body, ReadyAt: now.Add(delay)}, nil
}

// queueOf finds the path's queue and returns a copy of what the handlers
// need of it (the queue itself is only read under s.mu).
func (s *Service) queueOf(r *http.Request) (queue, *queueConsumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueLookupLocked(r)
	if err != nil {
		return queue{}, nil, err
	}
	var c *queueConsumer
	if len(q.Consumers) > 0 {
		cc := *q.Consumers[0]
		c = &cc
	}
	return *q, c, nil
}

// metricsJSON is result.metadata.metrics of the message routes.
type metricsJSON struct {
	BacklogBytes             int   `json:"backlog_bytes"`
	BacklogCount             int   `json:"backlog_count"`
	OldestMessageTimestampMs int64 `json:"oldest_message_timestamp_ms"`
}

// apiMetrics counts the queue's unacknowledged messages: waiting and leased.
func (b *broker) apiMetrics(queueID string) metricsJSON {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out metricsJSON
	count := func(m *queuedMessage) {
		out.BacklogCount++
		out.BacklogBytes += len(m.Body)
		if ts := m.Timestamp.UnixMilli(); out.OldestMessageTimestampMs == 0 || ts < out.OldestMessageTimestampMs {
			out.OldestMessageTimestampMs = ts
		}
	}
	for _, m := range b.backlog[queueID] {
		count(m)
	}
	for _, l := range b.leases {
		if l.queueID == queueID {
			count(l.msg)
		}
	}
	return out
}

type pushResultJSON struct {
	Metadata struct {
		Metrics metricsJSON `json:"metrics"`
	} `json:"metadata"`
}

// pullQueueOf is queueOf for the routes of an http_pull consumer: a queue
// without one is refused, without saying what that leaves the caller.
func (s *Service) pullQueueOf(r *http.Request, without string) (queue, *queueConsumer, error) {
	q, c, err := s.queueOf(r)
	if err == nil && (c == nil || !c.pull()) {
		err = queueInvalid("queue %s has no http_pull consumer: %s", q.Name, without)
	}
	return q, c, err
}

func (s *Service) pushed(w http.ResponseWriter, queueID string, msgs []*queuedMessage) {
	s.broker.add(queueID, msgs...)
	var out pushResultJSON
	out.Metadata.Metrics = s.broker.apiMetrics(queueID)
	core.WriteResult(w, out)
}

func (s *Service) qPush(w http.ResponseWriter, r *http.Request) {
	var in apiMessage
	if err := core.DecodeJSON(w, r, &in); err != nil {
		core.WriteError(w, err)
		return
	}
	q, _, err := s.queueOf(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	m, err := queuedFrom(in, time.Duration(q.DeliveryDelay)*time.Second, time.Now(), "message")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	s.pushed(w, q.ID, []*queuedMessage{m})
}

func (s *Service) qPushBatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Messages     []apiMessage `json:"messages"`
		DelaySeconds *json.Number `json:"delay_seconds"`
	}
	if err := core.DecodeJSON(w, r, &in); err != nil {
		core.WriteError(w, err)
		return
	}
	q, _, err := s.queueOf(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if len(in.Messages) == 0 || len(in.Messages) > maxBatchMessages {
		core.WriteError(w, queueInvalid("a batch carries 1 to %d messages, got %d", maxBatchMessages, len(in.Messages)))
		return
	}
	delay := time.Duration(q.DeliveryDelay) * time.Second
	if in.DelaySeconds != nil {
		d, err := intSetting("delay_seconds", *in.DelaySeconds, 0, maxQueueDeliveryDelay)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		delay = time.Duration(d) * time.Second
	}
	now, total := time.Now(), 0
	msgs := make([]*queuedMessage, 0, len(in.Messages))
	for i, raw := range in.Messages {
		m, err := queuedFrom(raw, delay, now, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			core.WriteError(w, err)
			return
		}
		total += len(m.Body)
		msgs = append(msgs, m)
	}
	if total > maxBatchBytes {
		core.WriteError(w, core.NewAPIError(http.StatusRequestEntityTooLarge, 11003,
			fmt.Sprintf("the batch's messages are %d bytes; a batch may be at most %d bytes", total, maxBatchBytes)))
		return
	}
	s.pushed(w, q.ID, msgs)
}

// pulledJSON is one message of a pull's answer.
type pulledJSON struct {
	ID          string            `json:"id"`
	Attempts    int               `json:"attempts"`
	Body        string            `json:"body"`
	LeaseID     string            `json:"lease_id"`
	Metadata    map[string]string `json:"metadata"`
	TimestampMs int64             `json:"timestamp_ms"`
}

type pullResultJSON struct {
	MessageBacklogCount int          `json:"message_backlog_count"`
	Messages            []pulledJSON `json:"messages"`
	Metadata            struct {
		Metrics metricsJSON `json:"metrics"`
	} `json:"metadata"`
}

// pullNumber reads a whole number from an optional field of a pull or ack within
// [lo, hi], or fallback when it is absent.
func pullNumber(field string, v *json.Number, fallback, lo, hi int) (int, error) {
	if v == nil {
		return fallback, nil
	}
	f, err := strconv.ParseFloat(string(*v), 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, queueInvalid("%s must be a whole number from %d to %d, got %s", field, lo, hi, *v)
	}
	return int(f), nil
}

func (s *Service) qPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		BatchSize           *json.Number `json:"batch_size"`
		VisibilityTimeoutMs *json.Number `json:"visibility_timeout_ms"`
	}
	if err := core.DecodeJSON(w, r, &in); err != nil {
		core.WriteError(w, err)
		return
	}
	q, c, err := s.pullQueueOf(r, "add a consumer of type http_pull to pull its messages over HTTP")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	size, err := pullNumber("batch_size", in.BatchSize, c.Settings.BatchSize, 1, maxPullBatchSize)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	visibility, err := pullNumber("visibility_timeout_ms", in.VisibilityTimeoutMs, c.Settings.VisibilityTimeoutMs, 0, maxVisibilityTimeoutMs)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	now := time.Now()
	s.expireLeases(now)
	b := s.broker
	out := pullResultJSON{Messages: []pulledJSON{}}
	b.mu.Lock()
	var rest []*queuedMessage
	for _, m := range b.backlog[q.ID] {
		if len(out.Messages) == size || m.ReadyAt.After(now) {
			rest = append(rest, m)
			continue
		}
		m.Deliveries++
		id := core.NewHexID() + core.NewHexID()
		b.leases[id] = &lease{queueID: q.ID, msg: m, until: now.Add(time.Duration(visibility) * time.Millisecond)}
		out.Messages = append(out.Messages, pulledJSON{
			ID: m.ID, Attempts: m.Deliveries, Body: m.text(), LeaseID: id, TimestampMs: m.Timestamp.UnixMilli(),
			Metadata: map[string]string{"CF-Content-Type": m.ContentType, "CF-sourceMessageSource": m.source()},
		})
	}
	b.backlog[q.ID] = rest
	b.mu.Unlock()
	out.Metadata.Metrics = b.apiMetrics(q.ID)
	out.MessageBacklogCount = out.Metadata.Metrics.BacklogCount
	core.WriteResult(w, out)
}

// text is a message's body as an API answers it: text and json as they
// are, bytes and v8 (a Worker's structured clone) in base64.
func (m *queuedMessage) text() string {
	if m.ContentType == "bytes" || m.ContentType == "v8" {
		return base64.StdEncoding.EncodeToString(m.Body)
	}
	return string(m.Body)
}

func (m *queuedMessage) source() string {
	if m.Source == "" {
		return sourceWorker
	}
	return m.Source
}

type ackResultJSON struct {
	AckCount   int               `json:"ackCount"`
	RetryCount int               `json:"retryCount"`
	Warnings   map[string]string `json:"warnings"`
}

func (s *Service) qAck(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Acks []struct {
			LeaseID string `json:"lease_id"`
		} `json:"acks"`
		Retries []struct {
			LeaseID      string       `json:"lease_id"`
			DelaySeconds *json.Number `json:"delay_seconds"`
		} `json:"retries"`
	}
	if err := core.DecodeJSON(w, r, &in); err != nil {
		core.WriteError(w, err)
		return
	}
	q, c, err := s.pullQueueOf(r, "there is nothing to acknowledge")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	delays := make([]int, len(in.Retries))
	for i, rt := range in.Retries {
		if delays[i], err = pullNumber(fmt.Sprintf("retries[%d].delay_seconds", i), rt.DelaySeconds, c.Settings.RetryDelay, 0, maxQueueDeliveryDelay); err != nil {
			core.WriteError(w, err)
			return
		}
	}
	now := time.Now()
	s.expireLeases(now)
	out := ackResultJSON{Warnings: map[string]string{}}
	b := s.broker
	take := func(id string) *lease {
		l := b.leases[id]
		if l == nil || l.queueID != q.ID {
			out.Warnings[id] = "lease " + id + " is not held: the message was acknowledged or retried, or its visibility timeout ended"
			return nil
		}
		delete(b.leases, id)
		return l
	}
	var again, dead []*queuedMessage
	b.mu.Lock()
	for _, a := range in.Acks {
		if take(a.LeaseID) != nil {
			out.AckCount++
		}
	}
	for i, rt := range in.Retries {
		l := take(rt.LeaseID)
		if l == nil {
			continue
		}
		out.RetryCount++
		if l.msg.Deliveries > c.Settings.MaxRetries {
			dead = append(dead, l.msg)
			continue
		}
		l.msg.ReadyAt = now.Add(time.Duration(delays[i]) * time.Second)
		again = append(again, l.msg)
	}
	b.mu.Unlock()
	if len(again) > 0 {
		b.add(q.ID, again...)
	}
	s.deadLetter(q.AccountID, c.DeadLetterQueue, dead, now)
	core.WriteResult(w, out)
}

// expireLeases returns the messages whose lease ended to their queue's
// backlog, or past max_retries to the consumer's dead-letter queue.
func (s *Service) expireLeases(now time.Time) {
	b := s.broker
	b.mu.Lock()
	var expired []*lease
	for id, l := range b.leases {
		if !l.until.After(now) {
			expired = append(expired, l)
			delete(b.leases, id)
		}
	}
	b.mu.Unlock()
	for _, l := range expired {
		s.mu.Lock()
		q := s.st.Queues[l.queueID]
		var c *queueConsumer
		if q != nil && len(q.Consumers) > 0 {
			cc := *q.Consumers[0]
			c = &cc
		}
		s.mu.Unlock()
		switch {
		case q == nil:
			// The queue is gone: so is its message.
		case c != nil && l.msg.Deliveries > c.Settings.MaxRetries:
			s.deadLetter(q.AccountID, c.DeadLetterQueue, []*queuedMessage{l.msg}, now)
		default:
			l.msg.ReadyAt = now
			b.add(l.queueID, l.msg)
		}
	}
}

// deadLetter moves msgs to the account's queue dlq (a name), fresh; with no
// dead-letter queue, or one that no longer exists, they are dropped, as
// Cloudflare drops them.
func (s *Service) deadLetter(acct, dlq string, msgs []*queuedMessage, now time.Time) {
	if len(msgs) == 0 || dlq == "" {
		return
	}
	s.mu.Lock()
	target := s.queueByNameLocked(acct, dlq)
	s.mu.Unlock()
	if target == nil {
		return
	}
	for _, m := range msgs {
		m.Deliveries, m.ReadyAt = 0, now
	}
	s.broker.add(target.ID, msgs...)
}

// qPurge deletes every message of the queue, waiting and leased, and
// answers the queue. The purge is complete when the answer comes.
func (s *Service) qPurge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		DeleteMessagesPermanently bool `json:"delete_messages_permanently"`
	}
	if err := core.DecodeJSON(w, r, &in); err != nil {
		core.WriteError(w, err)
		return
	}
	if !in.DeleteMessagesPermanently {
		core.WriteError(w, queueInvalid("purging deletes every message of the queue permanently: confirm with delete_messages_permanently true"))
		return
	}
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var out queueJSON
	if err == nil {
		q.PurgeStartedAt = time.Now().UTC()
		out = s.queueJSONLocked(q)
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteError(w, err)
		return
	}
	b := s.broker
	b.mu.Lock()
	delete(b.backlog, out.QueueID)
	for id, l := range b.leases {
		if l.queueID == out.QueueID {
			delete(b.leases, id)
		}
	}
	b.mu.Unlock()
	out = s.withProducers(r.PathValue("account_id"), out)
	s.saveAndRespond(w, nil, out)
}

type purgeStatusJSON struct {
	Completed string `json:"completed,omitempty"`
	StartedAt string `json:"started_at,omitempty"`
}

// qPurgeStatus reports the last purge: an empty object before any.
func (s *Service) qPurgeStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var out purgeStatusJSON
	if err == nil && !q.PurgeStartedAt.IsZero() {
		out = purgeStatusJSON{Completed: "true", StartedAt: cloudflare.Time(q.PurgeStartedAt)}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}
