package cfapi

import (
	"context"
	"encoding/json"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/queues"
)

// Queue is a Cloudflare queue.
type Queue struct {
	ID   string
	Name string
}

// CreateQueue creates a queue named name.
func (c *Client) CreateQueue(ctx context.Context, name string) (Queue, error) {
	q, err := c.api.Queues.New(ctx, queues.QueueNewParams{AccountID: cf.F(c.accountID), QueueName: cf.F(name)})
	if err != nil {
		return Queue{}, wrap(fmt.Sprintf("create queue %q", name), err)
	}
	return Queue{ID: q.QueueID, Name: q.QueueName}, nil
}

// FindQueue returns the queue named name, or ok=false.
func (c *Client) FindQueue(ctx context.Context, name string) (Queue, bool, error) {
	pager := c.api.Queues.ListAutoPaging(ctx, queues.QueueListParams{AccountID: cf.F(c.accountID)})
	q, ok, err := findListed(pager, func(q queues.Queue) bool { return q.QueueName == name }, "list queues")
	if !ok {
		return Queue{}, false, err
	}
	return Queue{ID: q.QueueID, Name: q.QueueName}, true, nil
}

// GetQueue reads a queue by ID; IsNotFound tells a missing one.
func (c *Client) GetQueue(ctx context.Context, id string) (Queue, error) {
	q, err := c.api.Queues.Get(ctx, id, queues.QueueGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return Queue{}, wrap(fmt.Sprintf("read queue %s", id), err)
	}
	return Queue{ID: q.QueueID, Name: q.QueueName}, nil
}

// DeleteQueue deletes a queue; a missing one is fine.
func (c *Client) DeleteQueue(ctx context.Context, id string) error {
	_, err := c.api.Queues.Delete(ctx, id, queues.QueueDeleteParams{AccountID: cf.F(c.accountID)})
	if err = wrap(fmt.Sprintf("delete queue %s", id), err); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// ConsumerSettings are a worker consumer's delivery settings; nil leaves a
// setting at the API's default (zero is a real value for retries and delay).
type ConsumerSettings struct {
	BatchSize      *int `json:"batch_size,omitempty"`
	MaxRetries     *int `json:"max_retries,omitempty"`
	MaxWaitTimeMs  *int `json:"max_wait_time_ms,omitempty"`
	MaxConcurrency *int `json:"max_concurrency,omitempty"`
	RetryDelay     *int `json:"retry_delay,omitempty"`
}

// Consumer is a worker consuming a queue.
type Consumer struct {
	ID              string
	Script          string
	DeadLetterQueue string
	Settings        ConsumerSettings
}

type consumerBody struct {
	Type            string           `json:"type"`
	ScriptName      string           `json:"script_name"`
	DeadLetterQueue string           `json:"dead_letter_queue,omitempty"`
	Settings        ConsumerSettings `json:"settings"`
}

// ListConsumers returns a queue's consumers.
func (c *Client) ListConsumers(ctx context.Context, queueID string) ([]Consumer, error) {
	page, err := c.api.Queues.Consumers.Get(ctx, queueID, queues.ConsumerGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return nil, wrap(fmt.Sprintf("list consumers of queue %s", queueID), err)
	}
	out := make([]Consumer, 0, len(page.Result))
	for _, item := range page.Result {
		var raw struct {
			ConsumerID      string           `json:"consumer_id"`
			Script          string           `json:"script"`
			ScriptName      string           `json:"script_name"`
			DeadLetterQueue string           `json:"dead_letter_queue"`
			Settings        ConsumerSettings `json:"settings"`
		}
		if err := json.Unmarshal([]byte(item.JSON.RawJSON()), &raw); err != nil {
			return nil, fmt.Errorf("decoding consumer of queue %s: %w", queueID, err)
		}
		script := raw.Script
		if script == "" {
			script = raw.ScriptName
		}
		out = append(out, Consumer{ID: raw.ConsumerID, Script: script, DeadLetterQueue: raw.DeadLetterQueue, Settings: raw.Settings})
	}
	return out, nil
}

// PutConsumer makes script the consumer of the queue with these settings,
// creating or updating the consumer entry.
func (c *Client) PutConsumer(ctx context.Context, queueID string, want Consumer) (Consumer, error) {
	existing, err := c.ListConsumers(ctx, queueID)
	if err != nil {
		return Consumer{}, err
	}
	body := consumerBody{Type: "worker", ScriptName: want.Script, DeadLetterQueue: want.DeadLetterQueue, Settings: want.Settings}
	for _, e := range existing {
		if e.Script != want.Script {
			continue
		}
		_, err := c.api.Queues.Consumers.Update(ctx, queueID, e.ID, queues.ConsumerUpdateParams{
			AccountID: cf.F(c.accountID), Body: queues.ConsumerUpdateParamsBody{
				Type:            cf.F(queues.ConsumerUpdateParamsBodyType("worker")),
				ScriptName:      cf.F(body.ScriptName),
				DeadLetterQueue: cf.F(body.DeadLetterQueue),
				Settings:        cf.F[any](body.Settings),
			}})
		if err != nil {
			return Consumer{}, wrap(fmt.Sprintf("update consumer %s of queue %s", want.Script, queueID), err)
		}
		want.ID = e.ID
		return want, nil
	}
	res, err := c.api.Queues.Consumers.New(ctx, queueID, queues.ConsumerNewParams{
		AccountID: cf.F(c.accountID), Body: queues.ConsumerNewParamsBody{
			Type:            cf.F(queues.ConsumerNewParamsBodyType("worker")),
			ScriptName:      cf.F(body.ScriptName),
			DeadLetterQueue: cf.F(body.DeadLetterQueue),
			Settings:        cf.F[any](body.Settings),
		}})
	if err != nil {
		return Consumer{}, wrap(fmt.Sprintf("add consumer %s to queue %s", want.Script, queueID), err)
	}
	want.ID = res.ConsumerID
	return want, nil
}

// DeleteConsumer removes a consumer; a missing one is fine.
func (c *Client) DeleteConsumer(ctx context.Context, queueID, consumerID string) error {
	_, err := c.api.Queues.Consumers.Delete(ctx, queueID, consumerID, queues.ConsumerDeleteParams{AccountID: cf.F(c.accountID)})
	if err = wrap(fmt.Sprintf("delete consumer %s of queue %s", consumerID, queueID), err); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}
