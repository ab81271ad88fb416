package upstream

// Bindings groups a worker's resource bindings. An empty When means always.
type Bindings struct {
	D1             []D1Binding            `json:"d1,omitempty"`
	KV             []KVBinding            `json:"kv,omitempty"`
	R2             []R2Binding            `json:"r2,omitempty"`
	QueueProducers []QueueBinding         `json:"queueProducers,omitempty"`
	Services       []ServiceBinding       `json:"services,omitempty"`
	DurableObjects []DurableObjectBinding `json:"durableObjects,omitempty"`
}

// D1Binding binds a D1 database (logical name) to Binding.
type D1Binding struct {
	Binding  string `json:"binding"`
	Database string `json:"database"`
	When     string `json:"when,omitempty"`
}

// KVBinding binds a KV namespace (logical name) to Binding.
type KVBinding struct {
	Binding   string `json:"binding"`
	Namespace string `json:"namespace"`
	When      string `json:"when,omitempty"`
}

// R2Binding binds an R2 bucket (logical name) to Binding.
type R2Binding struct {
	Binding string `json:"binding"`
	Bucket  string `json:"bucket"`
	When    string `json:"when,omitempty"`
}

// QueueBinding is a queue producer binding (queue by logical name).
type QueueBinding struct {
	Binding string `json:"binding"`
	Queue   string `json:"queue"`
	When    string `json:"when,omitempty"`
}

// ServiceBinding binds another worker (logical name) to Binding.
type ServiceBinding struct {
	Binding string `json:"binding"`
	Worker  string `json:"worker"`
	When    string `json:"when,omitempty"`
}

// DurableObjectBinding binds a Durable Object class of the same worker.
type DurableObjectBinding struct {
	Binding   string `json:"binding"`
	ClassName string `json:"className"`
	When      string `json:"when,omitempty"`
}
