package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// Counts keys of the Queues routes.
const (
	queueCreateKey   = "POST /client/v4/accounts/{account_id}/queues"
	queueEditKey     = "PATCH /client/v4/accounts/{account_id}/queues/{queue_id}"
	consumerListKey  = "GET /client/v4/accounts/{account_id}/queues/{queue_id}/consumers"
	consumerAddKey   = "POST /client/v4/accounts/{account_id}/queues/{queue_id}/consumers"
	consumerPutKey   = "PUT /client/v4/accounts/{account_id}/queues/{queue_id}/consumers/{consumer_id}"
	consumerDeleteKy = "DELETE /client/v4/accounts/{account_id}/queues/{queue_id}/consumers/{consumer_id}"
)

func TestQueueLifecycle(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()

	q := createQueue(t, c, "jobs")
	assert.Regexp(t, `^[0-9a-f]{32}$`, q.QueueID)
	assert.Equal(t, "jobs", q.QueueName)
	assert.EqualValues(t, 345600, q.Settings.MessageRetentionPeriod)
	assert.Zero(t, q.Settings.DeliveryDelay)
	assert.Empty(t, q.Consumers)
	assert.Empty(t, q.Producers)
	assert.NotEmpty(t, q.CreatedOn)

	_, err := c.Queues.New(ctx, queues.QueueNewParams{AccountID: cloudflare.F(acct), QueueName: cloudflare.F("jobs")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 11009)
	assert.Equal(t, "A queue with this name already exists", apiErr.Errors[0].Message)

	for _, bad := range []string{"", "Jobs", "-jobs", "jobs-", "job_queue", "job queue", strings.Repeat("a", 64)} {
		_, err := c.Queues.New(ctx, queues.QueueNewParams{AccountID: cloudflare.F(acct), QueueName: cloudflare.F(bad)})
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 11003)
		assert.Contains(t, apiErr.Errors[0].Message, "invalid queue name: "+bad+".")
	}
	createQueue(t, c, strings.Repeat("a", 63))
	createQueue(t, c, "a")

	list, err := c.Queues.List(ctx, queues.QueueListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	var names []string
	for _, item := range list.Result {
		names = append(names, item.QueueName)
	}
	assert.Equal(t, []string{"a", strings.Repeat("a", 63), "jobs"}, names)
	// The provider finds queues with the auto-pager over this single page.
	pager := c.Queues.ListAutoPaging(ctx, queues.QueueListParams{AccountID: cloudflare.F(acct)})
	n := 0
	for pager.Next() {
		n++
		require.LessOrEqual(t, n, 3, "pager did not terminate")
	}
	require.NoError(t, pager.Err())
	assert.Equal(t, 3, n)

	got, err := c.Queues.Get(ctx, q.QueueID, queues.QueueGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "jobs", got.QueueName)

	renamed, err := c.Queues.Edit(ctx, q.QueueID, queues.QueueEditParams{AccountID: cloudflare.F(acct),
		Queue: queues.QueueParam{QueueName: cloudflare.F("tasks")}})
	require.NoError(t, err)
	assert.Equal(t, "tasks", renamed.QueueName)
	assert.Equal(t, q.QueueID, renamed.QueueID)
	_, err = c.Queues.Edit(ctx, q.QueueID, queues.QueueEditParams{AccountID: cloudflare.F(acct),
		Queue: queues.QueueParam{QueueName: cloudflare.F("a")}})
	requireAPIError(t, err, http.StatusBadRequest, 11009)
	_, err = c.Queues.Edit(ctx, q.QueueID, queues.QueueEditParams{AccountID: cloudflare.F(acct),
		Queue: queues.QueueParam{Settings: cloudflare.F(queues.QueueSettingsParam{DeliveryDelay: cloudflare.F(99999.0)})}})
	requireAPIError(t, err, http.StatusBadRequest, 11003)
	updated, err := c.Queues.Update(ctx, q.QueueID, queues.QueueUpdateParams{AccountID: cloudflare.F(acct),
		Queue: queues.QueueParam{Settings: cloudflare.F(queues.QueueSettingsParam{DeliveryDelay: cloudflare.F(30.0)})}})
	require.NoError(t, err)
	assert.EqualValues(t, 30, updated.Settings.DeliveryDelay)
	assert.Equal(t, "tasks", updated.QueueName, "an absent name is kept")

	_, err = c.Queues.Delete(ctx, q.QueueID, queues.QueueDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.Queues.Get(ctx, q.QueueID, queues.QueueGetParams{AccountID: cloudflare.F(acct)})
	apiErr = requireAPIError(t, err, http.StatusNotFound, 11000)
	assert.Equal(t, "Queue not found", apiErr.Errors[0].Message)
	_, err = c.Queues.Delete(ctx, q.QueueID, queues.QueueDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 11000)
	assert.Len(t, s.Inventory().Queues, 2)
	assert.Equal(t, 1+1+7+2, s.Counts()[queueCreateKey])
	assert.Equal(t, 3, s.Counts()[queueEditKey])
}

// consumerParams is a worker consumer body as the provider sends it.
func consumerParams(script, dlq string, settings any) queues.ConsumerNewParams {
	return queues.ConsumerNewParams{AccountID: cloudflare.F(acct), Body: queues.ConsumerNewParamsBody{
		Type:            cloudflare.F(queues.ConsumerNewParamsBodyType("worker")),
		ScriptName:      cloudflare.F(script),
		DeadLetterQueue: cloudflare.F(dlq),
		Settings:        cloudflare.F(settings),
	}}
}

func consumerUpdate(script, dlq string, settings any) queues.ConsumerUpdateParams {
	return queues.ConsumerUpdateParams{AccountID: cloudflare.F(acct), Body: queues.ConsumerUpdateParamsBody{
		Type:            cloudflare.F(queues.ConsumerUpdateParamsBodyType("worker")),
		ScriptName:      cloudflare.F(script),
		DeadLetterQueue: cloudflare.F(dlq),
		Settings:        cloudflare.F(settings),
	}}
}

func listConsumers(t *testing.T, c *cloudflare.Client, queueID string) []M {
	t.Helper()
	page, err := c.Queues.Consumers.Get(context.Background(), queueID, queues.ConsumerGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	out := []M{}
	for _, item := range page.Result {
		var m M
		require.NoError(t, json.Unmarshal([]byte(item.JSON.RawJSON()), &m))
		out = append(out, m)
	}
	return out
}

func TestQueueConsumers(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	jobs := createQueue(t, c, "jobs")
	createQueue(t, c, "jobs-dlq")
	mustUpload(t, c, "consumer", meta())

	_, err := c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("ghost", "", M{}))
	requireAPIError(t, err, http.StatusBadRequest, 10007)
	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "no-such-queue", M{}))
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 11000)
	assert.Contains(t, apiErr.Errors[0].Message, "no-such-queue")
	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "jobs", M{}))
	requireAPIError(t, err, http.StatusBadRequest, 11003)
	_, err = c.Queues.Consumers.New(ctx, strings.Repeat("0", 32), consumerParams("consumer", "", M{}))
	requireAPIError(t, err, http.StatusNotFound, 11000)
	for field, bad := range map[string]any{
		"batch_size": 0, "max_retries": 101, "max_wait_time_ms": 60001, "max_concurrency": 251, "retry_delay": -1,
	} {
		_, err := c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "", M{field: bad}))
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 11003)
		assert.Contains(t, apiErr.Errors[0].Message, "settings."+field)
	}
	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "", M{"batch_size": 2.5}))
	requireAPIError(t, err, http.StatusBadRequest, 11003)
	assert.Empty(t, listConsumers(t, c, jobs.QueueID), "no rejected consumer was stored")

	// The provider's shape: omitted settings take the defaults.
	created, err := c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "jobs-dlq", M{"batch_size": 50, "max_concurrency": 5}))
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}$`, created.ConsumerID)
	assert.Equal(t, "consumer", created.Script)
	assert.Equal(t, jobs.QueueID, created.QueueID)
	consumers := listConsumers(t, c, jobs.QueueID)
	require.Len(t, consumers, 1)
	assert.Equal(t, created.ConsumerID, consumers[0]["consumer_id"])
	assert.Equal(t, "consumer", consumers[0]["script"])
	assert.Equal(t, "consumer", consumers[0]["script_name"])
	assert.Equal(t, "jobs", consumers[0]["queue_name"])
	assert.Equal(t, "worker", consumers[0]["type"])
	assert.Equal(t, "jobs-dlq", consumers[0]["dead_letter_queue"])
	assert.Equal(t, M{"batch_size": 50.0, "max_retries": 3.0, "max_wait_time_ms": 5000.0, "max_concurrency": 5.0, "retry_delay": 0.0},
		consumers[0]["settings"])

	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "", M{}))
	apiErr = requireAPIError(t, err, http.StatusBadRequest, 11004)
	assert.Contains(t, apiErr.Errors[0].Message, "consumer_exists")

	// Update replaces the settings and the dead-letter queue.
	_, err = c.Queues.Consumers.Update(ctx, jobs.QueueID, created.ConsumerID, consumerUpdate("consumer", "", M{"max_retries": 10, "retry_delay": 60}))
	require.NoError(t, err)
	consumers = listConsumers(t, c, jobs.QueueID)
	require.Len(t, consumers, 1)
	assert.Nil(t, consumers[0]["dead_letter_queue"])
	assert.Equal(t, M{"batch_size": 10.0, "max_retries": 10.0, "max_wait_time_ms": 5000.0, "retry_delay": 60.0},
		consumers[0]["settings"])
	assert.Equal(t, created.CreatedOn, consumers[0]["created_on"])
	_, err = c.Queues.Consumers.Update(ctx, jobs.QueueID, created.ConsumerID, consumerUpdate("consumer", "jobs-dlq", M{"batch_size": 101}))
	requireAPIError(t, err, http.StatusBadRequest, 11003)
	_, err = c.Queues.Consumers.Update(ctx, jobs.QueueID, created.ConsumerID, consumerUpdate("consumer", "gone", M{}))
	requireAPIError(t, err, http.StatusBadRequest, 11000)
	_, err = c.Queues.Consumers.Update(ctx, jobs.QueueID, strings.Repeat("f", 32), consumerUpdate("consumer", "", M{}))
	requireAPIError(t, err, http.StatusNotFound, 11005)

	// The queue object lists its consumer; the inventory names the script.
	got, err := c.Queues.Get(ctx, jobs.QueueID, queues.QueueGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, got.Consumers, 1)
	assert.EqualValues(t, 1, got.ConsumersTotalCount)
	assert.Equal(t, []emulator.QueueEntry{
		{AccountID: acct, ID: jobs.QueueID, Name: "jobs", Consumers: []string{"consumer"}},
		{AccountID: acct, ID: s.Inventory().Queues[1].ID, Name: "jobs-dlq", Consumers: []string{}},
	}, s.Inventory().Queues)

	_, err = c.Queues.Consumers.Delete(ctx, jobs.QueueID, created.ConsumerID, queues.ConsumerDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.Queues.Consumers.Delete(ctx, jobs.QueueID, created.ConsumerID, queues.ConsumerDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 11005)
	assert.Empty(t, listConsumers(t, c, jobs.QueueID))
	assert.Equal(t, 4, s.Counts()[consumerPutKey])
	assert.Equal(t, 2, s.Counts()[consumerDeleteKy])
	assert.Equal(t, 1+1+1+1+5+1+1+1, s.Counts()[consumerAddKey])
	assert.Equal(t, 4, s.Counts()[consumerListKey])
}

func TestQueueConsumerLinksToScripts(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	jobs := createQueue(t, c, "jobs")
	dlq := createQueue(t, c, "jobs-dlq")
	mustUpload(t, c, "consumer", meta())
	created, err := c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "jobs-dlq", M{}))
	require.NoError(t, err)

	// A consumed script is not deleted without force; with force its
	// consumer entries go too.
	_, err = c.Workers.Scripts.Delete(ctx, "consumer", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10064)
	assert.Contains(t, apiErr.Errors[0].Message, "consumer of queue jobs")
	_, err = c.Workers.Scripts.Delete(ctx, "consumer", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct), Force: cloudflare.F(true)})
	require.NoError(t, err)
	assert.Empty(t, listConsumers(t, c, jobs.QueueID))
	_, err = c.Queues.Consumers.Delete(ctx, jobs.QueueID, created.ConsumerID, queues.ConsumerDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 11005)

	// Deleting a queue deletes its consumers; deleting a dead-letter queue
	// leaves its users working.
	mustUpload(t, c, "consumer", meta())
	_, err = c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("consumer", "jobs-dlq", M{}))
	require.NoError(t, err)
	_, err = c.Queues.Delete(ctx, dlq.QueueID, queues.QueueDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	consumers := listConsumers(t, c, jobs.QueueID)
	require.Len(t, consumers, 1)
	_, err = c.Queues.Delete(ctx, jobs.QueueID, queues.QueueDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.Workers.Scripts.Delete(ctx, "consumer", workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err, "no consumer is left to block the delete")
	assert.True(t, s.Inventory().Empty(), "%+v", s.Inventory())
}

func TestWorkersAndQueuesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	c := newClient(first)
	jobs := createQueue(t, c, "jobs")
	m := meta(M{"type": "queue", "name": "JOBS", "queue_name": "jobs"}, M{"type": "secret_text", "name": "TOKEN", "text": "persisted"},
		M{"type": "durable_object_namespace", "name": "ROOMS", "class_name": "Room"})
	m["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"Room"}}
	mustUpload(t, c, "app", m, indexJS, mod{"wasm/a.wasm", "application/wasm", "\x00asm\x01\x00\x00\x00"})
	_, err = c.Workers.Scripts.Schedules.Update(ctx, "app", workers.ScriptScheduleUpdateParams{AccountID: cloudflare.F(acct),
		Body: []workers.ScriptScheduleUpdateParamsBody{{Cron: cloudflare.F("0 * * * *")}}})
	require.NoError(t, err)
	_, err = c.Workers.Scripts.Subdomain.New(ctx, "app", workers.ScriptSubdomainNewParams{AccountID: cloudflare.F(acct), Enabled: cloudflare.F(true)})
	require.NoError(t, err)
	_, err = c.Workers.Subdomains.Update(ctx, workers.SubdomainUpdateParams{AccountID: cloudflare.F(acct), Subdomain: cloudflare.F("kept")})
	require.NoError(t, err)
	consumer, err := c.Queues.Consumers.New(ctx, jobs.QueueID, consumerParams("app", "", M{"batch_size": 7}))
	require.NoError(t, err)
	before := first.Inventory()
	detail, ok := first.Workers().Worker(acct, "app")
	require.True(t, ok)
	require.NoError(t, first.Close())

	second := start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, before, second.Inventory())
	require.Len(t, before.Workers, 1)
	require.Len(t, before.Queues, 1)
	after, ok := second.Workers().Worker(acct, "app")
	require.True(t, ok)
	assert.Equal(t, detail, after)
	assert.Equal(t, "persisted", after.Secrets["TOKEN"])
	assert.Equal(t, "\x00asm\x01\x00\x00\x00", after.Modules["wasm/a.wasm"])

	c = newClient(second)
	assert.Equal(t, M{"new_tag": "v1"}, settingsJSON(t, c, "app")["migrations"])
	sub, err := c.Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, "kept", sub.Subdomain)
	consumers := listConsumers(t, c, jobs.QueueID)
	require.Len(t, consumers, 1)
	assert.Equal(t, consumer.ConsumerID, consumers[0]["consumer_id"])
	assert.EqualValues(t, 7, consumers[0]["settings"].(M)["batch_size"])

	// The tag survived as a precondition.
	_, err = upload(t, c, "app", m)
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10079)
	assert.Contains(t, apiErr.Errors[0].Message, "v1")
}

// TestQueueListNameFilter is the lookup wrangler does before `queues info`,
// `queues delete` and consumer attachment: GET queues?name=X, taking the
// first result. An ignored filter answered the alphabetically first queue,
// and wrangler deleted it instead of the one named.
func TestQueueListNameFilter(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	for _, name := range []string{"alpha", "beta", "gamma"} {
		createQueue(t, c, name)
	}
	list := func(query string) (names, ids []string, info map[string]any) {
		t.Helper()
		resp, body := do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/queues"+query, "Bearer "+emulator.DefaultToken, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var env struct {
			Result []struct {
				QueueID   string `json:"queue_id"`
				QueueName string `json:"queue_name"`
			} `json:"result"`
			ResultInfo map[string]any `json:"result_info"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &env))
		for _, q := range env.Result {
			names, ids = append(names, q.QueueName), append(ids, q.QueueID)
		}
		return names, ids, env.ResultInfo
	}

	names, ids, info := list("?page=1&name=gamma")
	require.Equal(t, []string{"gamma"}, names)
	assert.EqualValues(t, 1, info["total_pages"])
	names, _, _ = list("?name=beta&name=alpha")
	assert.Equal(t, []string{"alpha", "beta"}, names)
	names, _, _ = list("?name=gam")
	assert.Empty(t, names, "the filter is an exact match")
	names, _, _ = list("")
	assert.Equal(t, []string{"alpha", "beta", "gamma"}, names)
	names, _, info = list("?page=2&per_page=2")
	assert.Equal(t, []string{"gamma"}, names)
	assert.EqualValues(t, 2, info["total_pages"])

	// What `wrangler queues delete gamma` does: resolve, then delete by ID.
	_, err := c.Queues.Delete(context.Background(), ids[0], queues.QueueDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	names, _, _ = list("")
	assert.Equal(t, []string{"alpha", "beta"}, names, "only the queue named was deleted")
}

// GET workers/scripts/{name}/queue-consumers lists what the script consumes
// across queues (Alchemy reads it before deleting a Worker).
func TestQueueConsumersOfAScript(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "consumer", meta())
	mustUpload(t, c, "idle", meta())
	jobs := createQueue(t, c, "jobs")
	createQueue(t, c, "other")
	_, err := c.Queues.Consumers.New(context.Background(), jobs.QueueID, consumerParams("consumer", "", M{"batch_size": 4}))
	require.NoError(t, err)

	url := s.CloudflareBaseURL() + "accounts/" + acct + "/workers/scripts/"
	resp, body := do(t, http.MethodGet, url+"consumer/queue-consumers", "Bearer "+emulator.DefaultToken, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var env struct {
		Result []M `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &env))
	require.Len(t, env.Result, 1)
	assert.Equal(t, "jobs", env.Result[0]["queue_name"])
	assert.Equal(t, jobs.QueueID, env.Result[0]["queue_id"])
	assert.Equal(t, "consumer", env.Result[0]["script_name"])
	assert.Equal(t, 4.0, env.Result[0]["settings"].(map[string]any)["batch_size"])

	resp, body = do(t, http.MethodGet, url+"idle/queue-consumers", "Bearer "+emulator.DefaultToken, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"result":[]`)
	resp, body = do(t, http.MethodGet, url+"ghost/queue-consumers", "Bearer "+emulator.DefaultToken, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, `"code":10007`)
}
