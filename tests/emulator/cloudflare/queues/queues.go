package queues

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Register mounts the routes of the API.
func (s *Service) Register() {
	const base = "/client/v4/accounts/{account_id}/queues"
	s.cf.API("POST "+base, cloudflare.AuthAccount, s.qCreate)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.qList)
	s.cf.API("GET "+base+"/{queue_id}", cloudflare.AuthAccount, s.qGet)
	s.cf.API("PUT "+base+"/{queue_id}", cloudflare.AuthAccount, s.qUpdate)
	s.cf.API("PATCH "+base+"/{queue_id}", cloudflare.AuthAccount, s.qUpdate)
	s.cf.API("DELETE "+base+"/{queue_id}", cloudflare.AuthAccount, s.qDelete)
	s.cf.API("GET "+base+"/{queue_id}/consumers", cloudflare.AuthAccount, s.qListConsumers)
	s.cf.API("POST "+base+"/{queue_id}/consumers", cloudflare.AuthAccount, s.qAddConsumer)
	s.cf.API("GET "+base+"/{queue_id}/consumers/{consumer_id}", cloudflare.AuthAccount, s.qGetConsumer)
	s.cf.API("PUT "+base+"/{queue_id}/consumers/{consumer_id}", cloudflare.AuthAccount, s.qUpdateConsumer)
	s.cf.API("DELETE "+base+"/{queue_id}/consumers/{consumer_id}", cloudflare.AuthAccount, s.qDeleteConsumer)
	s.cf.API("GET /client/v4/accounts/{account_id}/workers/scripts/{script_name}/queue-consumers", cloudflare.AuthAccount, s.qScriptConsumers)
	s.registerMessages()
	s.registerAdmin()
}

// queueNameRE is the rule the real API quotes in its 11003 error.
var queueNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Queue defaults: 4 days of retention, no delivery delay; consumer
// defaults as documented for worker consumers.
const (
	defaultRetention      = 345600
	defaultBatchSize      = 10
	defaultMaxRetries     = 3
	defaultMaxWaitTimeMs  = 5000
	defaultRetryDelay     = 0
	maxQueueDeliveryDelay = 43200
	// An http_pull consumer's defaults and bounds: a pull takes 5 messages
	// and leases them for 30 s unless it says otherwise (assumed: the values
	// wrangler's consumer configuration describes), at most 12 hours.
	defaultPullBatchSize       = 5
	defaultVisibilityTimeoutMs = 30000
	maxVisibilityTimeoutMs     = 12 * 60 * 60 * 1000
)

// The consumer types: a Worker the broker pushes batches to, or HTTP pull
// (messages/pull and messages/ack, pull.go).
const (
	consumerWorker   = "worker"
	consumerHTTPPull = "http_pull"
)

func queueNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 11000, "Queue not found")
}

func queueInvalid(format string, args ...any) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 11003, fmt.Sprintf(format, args...))
}

func checkQueueName(name string) error {
	if !queueNameRE.MatchString(name) {
		return queueInvalid("invalid queue name: %s. Must match %s", name, queueNameRE.String())
	}
	return nil
}

type queueSettingsJSON struct {
	DeliveryDelay          int  `json:"delivery_delay"`
	DeliveryPaused         bool `json:"delivery_paused"`
	MessageRetentionPeriod int  `json:"message_retention_period"`
}

type queueProducerJSON struct {
	Type   string `json:"type"`
	Script string `json:"script"`
}

type queueJSON struct {
	QueueID             string              `json:"queue_id"`
	QueueName           string              `json:"queue_name"`
	CreatedOn           string              `json:"created_on"`
	ModifiedOn          string              `json:"modified_on"`
	Producers           []queueProducerJSON `json:"producers"`
	ProducersTotalCount int                 `json:"producers_total_count"`
	Consumers           []consumerJSON      `json:"consumers"`
	ConsumersTotalCount int                 `json:"consumers_total_count"`
	Settings            queueSettingsJSON   `json:"settings"`
}

// consumerJSON is a consumer as the API answers it: a worker consumer
// names its script; an http_pull consumer has none (the SDKs' two variants,
// MqWorkerConsumer and MqHTTPConsumer).
type consumerJSON struct {
	ConsumerID      string `json:"consumer_id"`
	QueueID         string `json:"queue_id"`
	QueueName       string `json:"queue_name"`
	Script          string `json:"script,omitempty"`
	ScriptName      string `json:"script_name,omitempty"`
	Type            string `json:"type"`
	DeadLetterQueue string `json:"dead_letter_queue,omitempty"`
	Settings        any    `json:"settings"`
	CreatedOn       string `json:"created_on"`
}

// pullSettingsJSON are an http_pull consumer's settings: the documented
// fields of MqHTTPConsumer's settings (no max_wait_time_ms or
// max_concurrency, which only a push consumer has).
type pullSettingsJSON struct {
	BatchSize           int `json:"batch_size"`
	MaxRetries          int `json:"max_retries"`
	RetryDelay          int `json:"retry_delay"`
	VisibilityTimeoutMs int `json:"visibility_timeout_ms"`
}

func (q *queue) consumerJSON(c *queueConsumer) consumerJSON {
	out := consumerJSON{
		ConsumerID: c.ID, QueueID: q.ID, QueueName: q.Name, Type: c.kind(),
		DeadLetterQueue: c.DeadLetterQueue, CreatedOn: cloudflare.Time(c.CreatedOn),
	}
	if c.pull() {
		out.Settings = pullSettingsJSON{BatchSize: c.Settings.BatchSize, MaxRetries: c.Settings.MaxRetries,
			RetryDelay: c.Settings.RetryDelay, VisibilityTimeoutMs: c.Settings.VisibilityTimeoutMs}
		return out
	}
	settings := c.Settings
	settings.VisibilityTimeoutMs = 0 // a pull consumer's setting only
	out.Script, out.ScriptName, out.Settings = c.Script, c.Script, settings
	return out
}

// queueJSONLocked renders a queue but for its producers, which
// withProducers adds once the lock is released.
func (s *Service) queueJSONLocked(q *queue) queueJSON {
	out := queueJSON{
		QueueID: q.ID, QueueName: q.Name, CreatedOn: cloudflare.Time(q.CreatedOn), ModifiedOn: cloudflare.Time(q.ModifiedOn),
		Producers: []queueProducerJSON{}, Consumers: []consumerJSON{},
		Settings: queueSettingsJSON{DeliveryDelay: q.DeliveryDelay, DeliveryPaused: q.DeliveryPaused, MessageRetentionPeriod: q.MessageRetentionPeriod},
	}
	for _, c := range q.Consumers {
		out.Consumers = append(out.Consumers, q.consumerJSON(c))
	}
	out.ConsumersTotalCount = len(out.Consumers)
	return out
}

// withProducers adds the queue's producers: the account's scripts with a
// queue binding to it, which is what the real API reports. It asks the
// scripts, so it runs without s.mu.
func (s *Service) withProducers(acct string, out queueJSON) queueJSON {
	for _, script := range s.scripts.Producers(acct, out.QueueName) {
		out.Producers = append(out.Producers, queueProducerJSON{Type: "worker", Script: script})
	}
	out.ProducersTotalCount = len(out.Producers)
	return out
}

func (s *Service) queueByNameLocked(acct, name string) *queue {
	for _, q := range s.st.Queues {
		if q.AccountID == acct && q.Name == name {
			return q
		}
	}
	return nil
}

func (s *Service) queueLookupLocked(r *http.Request) (*queue, error) {
	q, ok := s.st.Queues[r.PathValue("queue_id")]
	if !ok || q.AccountID != r.PathValue("account_id") {
		return nil, queueNotFound()
	}
	return q, nil
}

func queueDuplicate() *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 11009, "A queue with this name already exists")
}

// queueBody is the body of create and update.
type queueBody struct {
	QueueName *string `json:"queue_name"`
	Settings  *struct {
		DeliveryDelay          *json.Number `json:"delivery_delay"`
		DeliveryPaused         *bool        `json:"delivery_paused"`
		MessageRetentionPeriod *json.Number `json:"message_retention_period"`
	} `json:"settings"`
}

// applySettings validates the body's settings and writes them into q.
func (b *queueBody) applySettings(q *queue) error {
	if b.Settings == nil {
		return nil
	}
	delay, retention := q.DeliveryDelay, q.MessageRetentionPeriod
	var err error
	if v := b.Settings.DeliveryDelay; v != nil {
		if delay, err = intSetting("settings.delivery_delay", *v, 0, maxQueueDeliveryDelay); err != nil {
			return err
		}
	}
	if v := b.Settings.MessageRetentionPeriod; v != nil {
		if retention, err = intSetting("settings.message_retention_period", *v, 60, 1209600); err != nil {
			return err
		}
	}
	q.DeliveryDelay, q.MessageRetentionPeriod = delay, retention
	if v := b.Settings.DeliveryPaused; v != nil {
		q.DeliveryPaused = *v
	}
	return nil
}

// intSetting parses a whole number within [lo, hi].
func intSetting(field string, n json.Number, lo, hi int) (int, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, queueInvalid("%s must be a whole number from %d to %d, got %s", field, lo, hi, n)
	}
	return int(f), nil
}

func (s *Service) qCreate(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	var body queueBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	name := ""
	if body.QueueName != nil {
		name = *body.QueueName
	}
	if err := checkQueueName(name); err != nil {
		core.WriteError(w, err)
		return
	}
	now := time.Now().UTC()
	q := &queue{ID: core.NewHexID(), AccountID: acct, Name: name, CreatedOn: now, ModifiedOn: now,
		MessageRetentionPeriod: defaultRetention, Consumers: []*queueConsumer{}}
	if err := body.applySettings(q); err != nil {
		core.WriteError(w, err)
		return
	}
	s.mu.Lock()
	var err error
	var out queueJSON
	if s.queueByNameLocked(acct, name) != nil {
		err = queueDuplicate()
	} else {
		s.st.Queues[q.ID] = q
		out = s.queueJSONLocked(q)
	}
	s.mu.Unlock()
	if err == nil {
		out = s.withProducers(acct, out)
	}
	s.saveAndRespond(w, err, out)
}

// qList lists the account's queues sorted by name. Each `name` query
// parameter (wrangler sends one per queue it resolves, e.g.
// `?page=1&name=jobs`) keeps only the queue of exactly that name; without
// one every queue is listed. Wrangler takes the first result as the queue it
// asked for, so an ignored filter makes it act on the wrong queue.
//
// Inferred: the filter is an exact match (wrangler relies on that), and
// without per_page the whole list is one page, which is also what
// cloudflare-go's SinglePage List expects; page and per_page slice it as on
// the other v4 lists, and result_info tells wrangler's pager when to stop.
func (s *Service) qList(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	names := r.URL.Query()["name"]
	s.mu.Lock()
	out := []queueJSON{}
	for _, q := range s.st.Queues {
		if q.AccountID == acct && (len(names) == 0 || slices.Contains(names, q.Name)) {
			out = append(out, s.queueJSONLocked(q))
		}
	}
	s.mu.Unlock()
	for i := range out {
		out[i] = s.withProducers(acct, out[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QueueName < out[j].QueueName })
	page, perPage := core.PageParams(r, max(len(out), 1), max(len(out), 1000))
	items, info := core.Paginate(out, page, perPage)
	core.WriteEnvelope(w, http.StatusOK, items, info, nil)
}

func (s *Service) qGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var out queueJSON
	if err == nil {
		out = s.queueJSONLocked(q)
	}
	s.mu.Unlock()
	if err == nil {
		out = s.withProducers(r.PathValue("account_id"), out)
	}
	core.Respond(w, err, out)
}

// qUpdate renames a queue and/or changes its settings (PUT and PATCH alike:
// absent fields keep their value). Scripts bind queues by name, so their
// bindings to the old name dangle after a rename, as they would for real.
func (s *Service) qUpdate(w http.ResponseWriter, r *http.Request) {
	var body queueBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if body.QueueName != nil {
		if err := checkQueueName(*body.QueueName); err != nil {
			core.WriteError(w, err)
			return
		}
	}
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	if err == nil && body.QueueName != nil {
		if other := s.queueByNameLocked(q.AccountID, *body.QueueName); other != nil && other != q {
			err = queueDuplicate()
		}
	}
	if err == nil {
		next := *q
		if err = body.applySettings(&next); err == nil {
			if body.QueueName != nil {
				next.Name = *body.QueueName
			}
			next.ModifiedOn = time.Now().UTC()
			*q = next
		}
	}
	var out queueJSON
	if err == nil {
		out = s.queueJSONLocked(q)
	}
	s.mu.Unlock()
	if err == nil {
		out = s.withProducers(r.PathValue("account_id"), out)
	}
	s.saveAndRespond(w, err, out)
}

// qDelete removes a queue with its consumers. Consumers of other queues
// that name it as dead_letter_queue keep the name: it is only a name, and
// creating a queue with it again makes it their dead-letter queue again.
func (s *Service) qDelete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	if err == nil {
		delete(s.st.Queues, q.ID)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}

func (s *Service) qListConsumers(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	out := []consumerJSON{}
	if err == nil {
		for _, c := range q.Consumers {
			out = append(out, q.consumerJSON(c))
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// qScriptConsumers is GET workers/scripts/{name}/queue-consumers: the
// consumers of every queue that the script consumes, in the shape of a
// queue's consumer list. Alchemy reads it before deleting a Worker (and
// takes 404 as "none"); the route and shape are inferred from that client,
// the 404 for a missing script is 10007 as on the other script routes.
func (s *Service) qScriptConsumers(w http.ResponseWriter, r *http.Request) {
	acct, script := r.PathValue("account_id"), r.PathValue("script_name")
	if !s.scripts.Exists(acct, script) { // asked before s.mu (the lock rule)
		core.WriteError(w, core.NewAPIError(http.StatusNotFound, 10007, "workers.api.error.script_not_found"))
		return
	}
	s.mu.Lock()
	out := []consumerJSON{}
	for _, id := range core.SortedKeys(s.st.Queues) {
		q := s.st.Queues[id]
		if q.AccountID != acct {
			continue
		}
		for _, c := range q.Consumers {
			if c.Script == script {
				out = append(out, q.consumerJSON(c))
			}
		}
	}
	s.mu.Unlock()
	core.WriteResult(w, out)
}

// qGetConsumer is GET consumers/{consumer_id}: one consumer, in the list's
// shape.
func (s *Service) qGetConsumer(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var out consumerJSON
	if err == nil {
		i := slices.IndexFunc(q.Consumers, func(c *queueConsumer) bool { return c.ID == r.PathValue("consumer_id") })
		if i < 0 {
			err = consumerNotFound()
		} else {
			out = q.consumerJSON(q.Consumers[i])
		}
	}
	s.mu.Unlock()
	core.Respond(w, err, out)
}

// consumerBody is the body of consumer create and update.
type consumerBody struct {
	Type            *string `json:"type"`
	ScriptName      *string `json:"script_name"`
	DeadLetterQueue *string `json:"dead_letter_queue"`
	Settings        *struct {
		BatchSize      *json.Number `json:"batch_size"`
		MaxRetries     *json.Number `json:"max_retries"`
		MaxWaitTimeMs  *json.Number `json:"max_wait_time_ms"`
		MaxConcurrency *json.Number `json:"max_concurrency"`
		RetryDelay     *json.Number `json:"retry_delay"`
		// VisibilityTimeoutMs is an http_pull consumer's.
		VisibilityTimeoutMs *json.Number `json:"visibility_timeout_ms"`
	} `json:"settings"`
}

// settings validates the body's settings for a consumer of type typ;
// absent ones take the defaults, because both create and update replace the
// whole settings object. An http_pull consumer takes batch_size,
// max_retries, retry_delay and visibility_timeout_ms; a push consumer's
// max_wait_time_ms and max_concurrency mean nothing to it and are dropped.
func (b *consumerBody) settings(typ string) (consumerSettings, error) {
	out := consumerSettings{BatchSize: defaultBatchSize, MaxRetries: defaultMaxRetries,
		MaxWaitTimeMs: defaultMaxWaitTimeMs, RetryDelay: defaultRetryDelay}
	if typ == consumerHTTPPull {
		out = consumerSettings{BatchSize: defaultPullBatchSize, MaxRetries: defaultMaxRetries,
			RetryDelay: defaultRetryDelay, VisibilityTimeoutMs: defaultVisibilityTimeoutMs}
	}
	in := b.Settings
	if in == nil {
		return out, nil
	}
	type field struct {
		name   string
		v      *json.Number
		lo, hi int
		dst    *int
	}
	fields := []field{
		{"settings.batch_size", in.BatchSize, 1, 100, &out.BatchSize},
		{"settings.max_retries", in.MaxRetries, 0, 100, &out.MaxRetries},
		{"settings.retry_delay", in.RetryDelay, 0, 43200, &out.RetryDelay},
	}
	if typ == consumerHTTPPull {
		fields = append(fields, field{"settings.visibility_timeout_ms", in.VisibilityTimeoutMs, 0, maxVisibilityTimeoutMs, &out.VisibilityTimeoutMs})
		in.MaxConcurrency = nil
	} else {
		fields = append(fields, field{"settings.max_wait_time_ms", in.MaxWaitTimeMs, 0, 60000, &out.MaxWaitTimeMs})
	}
	for _, f := range fields {
		if f.v == nil {
			continue
		}
		n, err := intSetting(f.name, *f.v, f.lo, f.hi)
		if err != nil {
			return out, err
		}
		*f.dst = n
	}
	if in.MaxConcurrency != nil {
		n, err := intSetting("settings.max_concurrency", *in.MaxConcurrency, 1, 250)
		if err != nil {
			return out, err
		}
		out.MaxConcurrency = &n
	}
	return out, nil
}

// scriptNamed is whether the script a consumer body names exists, asked
// before s.mu is taken (the lock rule: no call to the scripts under it). A
// body naming none keeps the consumer's script, which exists: deleting a
// script removes its consumers.
func (s *Service) scriptNamed(acct string, b *consumerBody) bool {
	return b.ScriptName == nil || (b.Type != nil && *b.Type == consumerHTTPPull) || s.scripts.Exists(acct, *b.ScriptName)
}

// checkConsumerLocked validates a consumer body for queue q. script is the
// consumer's script when the body names none (update); "" on create.
// scriptExists is scriptNamed's answer.
func (s *Service) checkConsumerLocked(q *queue, b *consumerBody, script string, scriptExists bool) (*queueConsumer, error) {
	typ := consumerWorker
	if b.Type != nil {
		typ = *b.Type
	}
	switch typ {
	case consumerWorker:
		if b.ScriptName != nil {
			script = *b.ScriptName
		}
		if script == "" {
			return nil, queueInvalid("script_name is required for a worker consumer")
		}
		if !scriptExists {
			return nil, core.NewAPIError(http.StatusBadRequest, 10007, fmt.Sprintf("workers.api.error.script_not_found: consumer script %q does not exist", script))
		}
	case consumerHTTPPull:
		script = "" // messages are pulled over HTTP: no script runs them
	default:
		return nil, queueInvalid("consumer type must be %q or %q, got %q", consumerWorker, consumerHTTPPull, typ)
	}
	dlq := ""
	if b.DeadLetterQueue != nil {
		dlq = *b.DeadLetterQueue
	}
	if dlq != "" {
		if dlq == q.Name {
			return nil, queueInvalid("dead_letter_queue %q is the queue itself; a queue cannot be its own dead letter queue", dlq)
		}
		if s.queueByNameLocked(q.AccountID, dlq) == nil {
			return nil, core.NewAPIError(http.StatusBadRequest, 11000, fmt.Sprintf("Queue not found: dead_letter_queue %q does not exist", dlq))
		}
	}
	settings, err := b.settings(typ)
	if err != nil {
		return nil, err
	}
	c := &queueConsumer{Script: script, DeadLetterQueue: dlq, Settings: settings}
	if typ == consumerHTTPPull {
		c.Type = consumerHTTPPull
	}
	return c, nil
}

func (s *Service) qAddConsumer(w http.ResponseWriter, r *http.Request) {
	var body consumerBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	scriptExists := s.scriptNamed(r.PathValue("account_id"), &body)
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var c *queueConsumer
	if err == nil {
		c, err = s.checkConsumerLocked(q, &body, "", scriptExists)
	}
	if err == nil && len(q.Consumers) > 0 {
		err = core.NewAPIError(http.StatusBadRequest, 11004, fmt.Sprintf(
			"workers.api.error.consumer_exists: queue %s already has a consumer (%s)", q.Name, q.Consumers[0].describe()))
	}
	var out consumerJSON
	if err == nil {
		c.ID, c.CreatedOn = core.NewHexID(), time.Now().UTC()
		q.Consumers = append(q.Consumers, c)
		out = q.consumerJSON(c)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func consumerNotFound() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 11005, "Consumer not found")
}

func (s *Service) qUpdateConsumer(w http.ResponseWriter, r *http.Request) {
	var body consumerBody
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	scriptExists := s.scriptNamed(r.PathValue("account_id"), &body)
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	var i int
	if err == nil {
		i = slices.IndexFunc(q.Consumers, func(c *queueConsumer) bool { return c.ID == r.PathValue("consumer_id") })
		if i < 0 {
			err = consumerNotFound()
		}
	}
	var c *queueConsumer
	if err == nil {
		c, err = s.checkConsumerLocked(q, &body, q.Consumers[i].Script, scriptExists)
	}
	var out consumerJSON
	if err == nil {
		c.ID, c.CreatedOn = q.Consumers[i].ID, q.Consumers[i].CreatedOn
		q.Consumers[i] = c
		out = q.consumerJSON(c)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, out)
}

func (s *Service) qDeleteConsumer(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	q, err := s.queueLookupLocked(r)
	if err == nil {
		n := len(q.Consumers)
		q.Consumers = slices.DeleteFunc(q.Consumers, func(c *queueConsumer) bool { return c.ID == r.PathValue("consumer_id") })
		if len(q.Consumers) == n {
			err = consumerNotFound()
		}
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, nil)
}
