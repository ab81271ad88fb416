package queues

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// stateVersion guards queues.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "queues.json"

// Scripts is what queues need of the Workers scripts; the composition root
// wires it (package workers implements it). It is called only while s.mu
// is not held.
type Scripts interface {
	Exists(account, name string) bool
	// Dispatch runs an event ("queue", "scheduled") in the script in
	// workerd and decodes its answer into out.
	Dispatch(ctx context.Context, account, script, event string, body, out any) error
	// Runnable is whether the script has code to run (modules deployed):
	// a consumer's messages wait until it has.
	Runnable(account, name string) bool
	// Producers are the account's scripts with a queue binding to queue
	// (by name), sorted: what a queue's producers list reports.
	Producers(account, queue string) []string
}

// Options configures the Queues service.
type Options struct {
	// Logf, when set, receives a line per failed delivery.
	Logf func(format string, args ...any)
}

// Service is the Queues API, the consumers and the broker that delivers
// the queues' messages. mu guards st; the broker has its own lock; neither
// is held while a batch is dispatched.
type Service struct {
	cf      *cloudflare.Accounts
	core    *core.Core
	mux     *http.ServeMux
	logf    func(format string, args ...any)
	scripts Scripts

	mu sync.Mutex
	st *store

	stateFile *core.StateFile
	broker    *broker // the queues' messages and their delivery (broker.go)
	started   bool    // Start ran: Close stops the delivery loop
}

// store is what queues.json holds. Messages are in memory only.
type store struct {
	Version int               `json:"version"`
	Queues  map[string]*queue `json:"queues"` // by queue ID
}

type queue struct {
	ID                     string           `json:"id"`
	AccountID              string           `json:"account_id"`
	Name                   string           `json:"name"`
	CreatedOn              time.Time        `json:"created_on"`
	ModifiedOn             time.Time        `json:"modified_on"`
	DeliveryDelay          int              `json:"delivery_delay"`
	DeliveryPaused         bool             `json:"delivery_paused"`
	MessageRetentionPeriod int              `json:"message_retention_period"`
	Consumers              []*queueConsumer `json:"consumers"`
	// PurgeStartedAt is when the queue was last purged (zero: never).
	PurgeStartedAt time.Time `json:"purge_started_at,omitzero"`
}

type queueConsumer struct {
	ID string `json:"id"`
	// Type is consumerHTTPPull for a pull consumer; "" is a worker
	// consumer (what every consumer was before pull consumers existed).
	Type            string           `json:"type,omitempty"`
	Script          string           `json:"script"`
	DeadLetterQueue string           `json:"dead_letter_queue,omitempty"` // a queue name
	Settings        consumerSettings `json:"settings"`
	CreatedOn       time.Time        `json:"created_on"`
}

type consumerSettings struct {
	BatchSize      int  `json:"batch_size"`
	MaxRetries     int  `json:"max_retries"`
	MaxWaitTimeMs  int  `json:"max_wait_time_ms"`
	MaxConcurrency *int `json:"max_concurrency,omitempty"` // nil: the platform's maximum; absent, not null: the SDKs declare a number
	RetryDelay     int  `json:"retry_delay"`
	// VisibilityTimeoutMs is how long a pull leases a message (http_pull
	// consumers only).
	VisibilityTimeoutMs int `json:"visibility_timeout_ms,omitempty"`
}

func (c *queueConsumer) pull() bool { return c.Type == consumerHTTPPull }

// kind is the consumer's type as the API names it.
func (c *queueConsumer) kind() string {
	if c.pull() {
		return consumerHTTPPull
	}
	return consumerWorker
}

// describe names the consumer in messages.
func (c *queueConsumer) describe() string {
	if c.pull() {
		return "an http_pull consumer"
	}
	return "script " + c.Script
}

// New loads queues.json from dataDir when present. Register mounts the
// routes; Start runs the delivery loop.
func New(opts Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts, scripts Scripts) (*Service, error) {
	s := &Service{cf: accounts, core: c, mux: c.Mux(), logf: opts.Logf, scripts: scripts, broker: newBroker(),
		st:        &store{Version: stateVersion, Queues: map[string]*queue{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".queues-*.json", "Queues state")}
	if err := core.LoadState(s.stateFile.Path(), "Queues state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.Queues)
	core.DropNil(s.st.Queues)
	for _, q := range s.st.Queues {
		q.Consumers = slices.DeleteFunc(q.Consumers, func(c *queueConsumer) bool { return c == nil })
	}
	return s, nil
}

// Start runs the delivery loop until Close.
func (s *Service) Start() {
	s.started = true
	go s.runBroker()
}

// Close stops the delivery loop (when Start ran) and waits for it; batches
// already handed to a script finish on their own.
func (s *Service) Close() error {
	if s.started {
		close(s.broker.stop)
		<-s.broker.done
	}
	return nil
}

// Save writes queues.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

func (s *Service) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}

// Exists reports whether account has a queue called name.
func (s *Service) Exists(account, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queueByNameLocked(account, name) != nil
}

// ConsumedBy names the account's queues script consumes, sorted.
func (s *Service) ConsumedBy(account, script string) []string {
	s.mu.Lock()
	var out []string
	for _, q := range s.st.Queues {
		if q.AccountID == account && slices.ContainsFunc(q.Consumers, func(c *queueConsumer) bool { return c.Script == script }) {
			out = append(out, q.Name)
		}
	}
	s.mu.Unlock()
	sort.Strings(out)
	return out
}

// RemoveConsumers drops a deleted script's consumers from the account's
// queues and persists that (a failed write is logged: the script's own
// deletion has already happened).
func (s *Service) RemoveConsumers(account, script string) {
	s.mu.Lock()
	for _, q := range s.st.Queues {
		if q.AccountID == account {
			q.Consumers = slices.DeleteFunc(q.Consumers, func(c *queueConsumer) bool { return c.Script == script })
		}
	}
	s.mu.Unlock()
	if err := s.save(); err != nil && s.logf != nil {
		s.logf("queues: %v", err)
	}
}

// Entry is one queue in the emulator's inventory.
type Entry struct {
	AccountID string   `json:"account_id"`
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Consumers []string `json:"consumers"` // script names; "http_pull" for a pull consumer
}

// Inventory lists every queue with its consumers' scripts, sorted by
// account, then name.
func (s *Service) Inventory() []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.st.Queues))
	for _, q := range s.st.Queues {
		scripts := make([]string, len(q.Consumers))
		for i, c := range q.Consumers {
			scripts[i] = c.Script
			if c.pull() {
				scripts[i] = consumerHTTPPull
			}
		}
		out = append(out, Entry{AccountID: q.AccountID, ID: q.ID, Name: q.Name, Consumers: scripts})
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		return core.Less2(out[a].AccountID, out[a].Name, out[b].AccountID, out[b].Name)
	})
	return out
}
