package queues

// The queues' messages. A producer binding's sends land in the queue's
// backlog here (in memory: a restarted emulator starts with empty queues);
// the delivery loop hands them to the queue's consumer script in batches as
// Cloudflare does: a batch goes when it is full (batch_size) or its oldest
// message has waited max_wait_time_ms; a message the consumer retries, or
// every message of a batch whose handler threw, is delivered again after
// its delay (the retry's delaySeconds, else the consumer's retry_delay)
// until it has been delivered max_retries+1 times, and then moves to the
// dead-letter queue when one is set, or is dropped.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// queuedMessage is one message in a backlog.
type queuedMessage struct {
	ID          string
	Timestamp   time.Time
	ContentType string // text, json, bytes, v8
	// Source is where it was sent from: "worker" (a producer binding) or
	// "api" (POST messages), as a pull reports in CF-sourceMessageSource.
	Source     string
	Body       []byte
	Deliveries int // how many times it was handed to the consumer
	// ReadyAt is when it may be delivered (after its delay or retry
	// delay); max_wait_time_ms counts from then too.
	ReadyAt time.Time
}

// broker holds every queue's backlog, by queue ID.
type broker struct {
	mu       sync.Mutex
	backlog  map[string][]*queuedMessage
	inFlight map[string]int
	leases   map[string]*lease // pulled messages by lease ID (pull.go)
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

func newBroker() *broker {
	return &broker{backlog: map[string][]*queuedMessage{}, inFlight: map[string]int{}, leases: map[string]*lease{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

func (b *broker) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *broker) add(queueID string, msgs ...*queuedMessage) {
	b.mu.Lock()
	b.backlog[queueID] = append(b.backlog[queueID], msgs...)
	b.mu.Unlock()
	b.poke()
}

// maxMessageBytes is Cloudflare's limit on one message.
const maxMessageBytes = 128000

// ServeBinding answers one request of a queue producer binding to the
// account's queue name: POST /message (X-Msg-Fmt, X-Msg-Delay-Secs) and
// POST /batch, into the queue's backlog.
func (s *Service) ServeBinding(w http.ResponseWriter, r *http.Request, acct, name string) {
	s.mu.Lock()
	q := s.queueByNameLocked(acct, name)
	s.mu.Unlock()
	if q == nil {
		http.Error(w, "queue "+name+" does not exist", http.StatusNotFound)
		return
	}
	now := time.Now()
	delayOf := func(v string, fallback int) (time.Duration, bool) {
		if v == "" {
			return time.Duration(fallback) * time.Second, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 43200 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	delay, ok := delayOf(r.Header.Get("X-Msg-Delay-Secs"), q.DeliveryDelay)
	if !ok {
		http.Error(w, "message delay is invalid", http.StatusBadRequest)
		return
	}
	var msgs []*queuedMessage
	switch r.URL.Path {
	case "/message":
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBytes))
		if err != nil {
			http.Error(w, "message length exceeds limit of 128000 bytes", http.StatusRequestEntityTooLarge)
			return
		}
		ct := r.Header.Get("X-Msg-Fmt")
		if ct == "" {
			ct = "v8"
		}
		if !validContentType(ct) {
			http.Error(w, "message content type "+ct+" is invalid", http.StatusBadRequest)
			return
		}
		msgs = append(msgs, &queuedMessage{ID: core.NewHexID(), Timestamp: now, ContentType: ct, Source: sourceWorker, Body: body, ReadyAt: now.Add(delay)})
	case "/batch":
		var in struct {
			Messages []struct {
				ContentType string `json:"contentType"`
				DelaySecs   *int   `json:"delaySecs"`
				Body        string `json:"body"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 288000*2)).Decode(&in); err != nil {
			http.Error(w, "malformed batch: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(in.Messages) > 100 {
			http.Error(w, "batch message count exceeds limit of 100", http.StatusRequestEntityTooLarge)
			return
		}
		for _, m := range in.Messages {
			body, err := base64.StdEncoding.DecodeString(m.Body)
			if err != nil || len(body) > maxMessageBytes {
				http.Error(w, "a message of the batch is malformed or too large", http.StatusBadRequest)
				return
			}
			ct := m.ContentType
			if ct == "" {
				ct = "v8"
			}
			if !validContentType(ct) {
				http.Error(w, "message content type "+ct+" is invalid", http.StatusBadRequest)
				return
			}
			d := delay
			if m.DelaySecs != nil {
				d = time.Duration(*m.DelaySecs) * time.Second
			}
			msgs = append(msgs, &queuedMessage{ID: core.NewHexID(), Timestamp: now, ContentType: ct, Source: sourceWorker, Body: body, ReadyAt: now.Add(d)})
		}
	default:
		http.NotFound(w, r)
		return
	}
	s.broker.add(q.ID, msgs...)
	core.WriteJSON(w, http.StatusOK, map[string]any{"metadata": map[string]any{"metrics": s.broker.metrics(q.ID)}})
}

func validContentType(ct string) bool {
	return slices.Contains([]string{"text", "json", "bytes", "v8"}, ct)
}

func (b *broker) metrics(queueID string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	msgs := b.backlog[queueID]
	size := 0
	var oldest int64
	for _, m := range msgs {
		size += len(m.Body)
		if oldest == 0 || m.Timestamp.UnixMilli() < oldest {
			oldest = m.Timestamp.UnixMilli()
		}
	}
	return map[string]any{"backlogCount": len(msgs), "backlogBytes": size, "oldestMessageTimestamp": oldest}
}

// consumerPlan is what the delivery loop needs of a queue's consumer.
type consumerPlan struct {
	acct, queueID, queueName, script, deadLetter string
	settings                                     consumerSettings
}

// runBroker delivers until Close.
func (s *Service) runBroker() {
	b := s.broker
	defer close(b.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		case <-b.wake:
		}
		s.expireLeases(time.Now())
		for _, plan := range s.consumerPlans() {
			for {
				batch := b.takeBatch(plan, time.Now())
				if batch == nil {
					break
				}
				go s.deliver(plan, batch)
			}
		}
	}
}

// consumerPlans are the consumers due for delivery: those of unpaused
// queues whose script has code to run (asked after s.mu is released).
func (s *Service) consumerPlans() []consumerPlan {
	s.mu.Lock()
	var out []consumerPlan
	for _, id := range core.SortedKeys(s.st.Queues) {
		q := s.st.Queues[id]
		for _, c := range q.Consumers {
			if c.pull() || c.Script == "" || q.DeliveryPaused {
				continue
			}
			out = append(out, consumerPlan{acct: q.AccountID, queueID: q.ID, queueName: q.Name, script: c.Script, deadLetter: c.DeadLetterQueue, settings: c.Settings})
		}
	}
	s.mu.Unlock()
	return slices.DeleteFunc(out, func(p consumerPlan) bool { return !s.scripts.Runnable(p.acct, p.script) })
}

// takeBatch removes the next batch due for plan's consumer, or nil.
func (b *broker) takeBatch(plan consumerPlan, now time.Time) []*queuedMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := 1 // one batch at a time unless max_concurrency says more
	if plan.settings.MaxConcurrency != nil {
		limit = *plan.settings.MaxConcurrency
	}
	if b.inFlight[plan.queueID] >= limit {
		return nil
	}
	size := max(plan.settings.BatchSize, 1)
	wait := time.Duration(plan.settings.MaxWaitTimeMs) * time.Millisecond
	var ready []*queuedMessage
	var oldest time.Time
	for _, m := range b.backlog[plan.queueID] {
		if !m.ReadyAt.After(now) {
			ready = append(ready, m)
			if oldest.IsZero() || m.ReadyAt.Before(oldest) {
				oldest = m.ReadyAt
			}
		}
	}
	if len(ready) == 0 || (len(ready) < size && now.Sub(oldest) < wait) {
		return nil
	}
	if len(ready) > size {
		ready = ready[:size]
	}
	rest := b.backlog[plan.queueID][:0:0]
	for _, m := range b.backlog[plan.queueID] {
		if !slices.Contains(ready, m) {
			rest = append(rest, m)
		}
	}
	b.backlog[plan.queueID] = rest
	b.inFlight[plan.queueID]++
	return ready
}

// queueResult is what Fetcher.queue answers.
type queueResult struct {
	Outcome    string `json:"outcome"`
	RetryBatch struct {
		Retry        bool `json:"retry"`
		DelaySeconds *int `json:"delaySeconds"`
	} `json:"retryBatch"`
	AckAll        bool     `json:"ackAll"`
	ExplicitAcks  []string `json:"explicitAcks"`
	RetryMessages []struct {
		MsgID        string `json:"msgId"`
		DelaySeconds *int   `json:"delaySeconds"`
	} `json:"retryMessages"`
}

func (s *Service) deliver(plan consumerPlan, batch []*queuedMessage) {
	b := s.broker
	defer func() {
		b.mu.Lock()
		b.inFlight[plan.queueID]--
		b.mu.Unlock()
		b.poke()
	}()
	type wireMessage struct {
		ID          string `json:"id"`
		Timestamp   int64  `json:"timestamp"`
		Attempts    int    `json:"attempts"`
		ContentType string `json:"contentType"`
		Body        string `json:"body"`
	}
	wire := make([]wireMessage, len(batch))
	for i, m := range batch {
		m.Deliveries++
		body := string(m.Body)
		if m.ContentType == "bytes" || m.ContentType == "v8" {
			body = base64.StdEncoding.EncodeToString(m.Body)
		}
		wire[i] = wireMessage{ID: m.ID, Timestamp: m.Timestamp.UnixMilli(), Attempts: m.Deliveries, ContentType: m.ContentType, Body: body}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var res queueResult
	if err := s.scripts.Dispatch(ctx, plan.acct, plan.script, "queue", map[string]any{"queue": plan.queueName, "messages": wire}, &res); err != nil {
		if s.logf != nil {
			s.logf("queue %s: delivery to %s failed: %v", plan.queueName, plan.script, err)
		}
		res = queueResult{Outcome: "exception"}
	}
	retryAll := res.RetryBatch.Retry || res.Outcome != "ok"
	retryDelay := map[string]*int{}
	retried := map[string]bool{}
	for _, rm := range res.RetryMessages {
		retried[rm.MsgID], retryDelay[rm.MsgID] = true, rm.DelaySeconds
	}
	now := time.Now()
	var again, dead []*queuedMessage
	for _, m := range batch {
		if !retryAll && !retried[m.ID] {
			continue // acknowledged, explicitly or by the handler returning
		}
		if m.Deliveries > plan.settings.MaxRetries {
			dead = append(dead, m)
			continue
		}
		delay := plan.settings.RetryDelay
		if res.RetryBatch.DelaySeconds != nil {
			delay = *res.RetryBatch.DelaySeconds
		}
		if d := retryDelay[m.ID]; d != nil {
			delay = *d
		}
		m.ReadyAt = now.Add(time.Duration(delay) * time.Second)
		again = append(again, m)
	}
	if len(again) > 0 {
		b.add(plan.queueID, again...)
	}
	s.deadLetter(plan.acct, plan.deadLetter, dead, now)
}

// Message is a message waiting in a queue, as the admin API shows it.
type Message struct {
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	// Body is the message's text (text and json messages) or its bytes in
	// base64 (bytes and v8).
	Body       string `json:"body"`
	Deliveries int    `json:"deliveries"`
}

// Messages lists the messages waiting in the account's queue name.
func (s *Service) Messages(acct, name string) ([]Message, bool) {
	s.mu.Lock()
	q := s.queueByNameLocked(acct, name)
	s.mu.Unlock()
	if q == nil {
		return nil, false
	}
	s.broker.mu.Lock()
	defer s.broker.mu.Unlock()
	out := []Message{}
	for _, m := range s.broker.backlog[q.ID] {
		body := string(m.Body)
		if m.ContentType == "bytes" || m.ContentType == "v8" {
			body = base64.StdEncoding.EncodeToString(m.Body)
		}
		out = append(out, Message{ID: m.ID, ContentType: m.ContentType, Body: body, Deliveries: m.Deliveries})
	}
	return out, true
}

func (s *Service) registerAdmin() {
	s.mux.HandleFunc("GET /__emulator/queues/{account_id}/{queue_name}/messages", func(w http.ResponseWriter, r *http.Request) {
		msgs, ok := s.Messages(r.PathValue("account_id"), r.PathValue("queue_name"))
		if !ok {
			core.AdminError(w, http.StatusNotFound, errors.New("no such queue"))
			return
		}
		core.WriteJSON(w, http.StatusOK, msgs)
	})
}
