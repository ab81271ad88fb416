package wrangler_test

// The provider's request path, for interop and for the benchmark. The
// provider's client lives in provider/internal/cloudflare (not importable
// from here, and being moved into sub-packages), so this file makes the same
// cloudflare-go/v4 requests it makes, in the same order: the multipart
// upload built like ScriptUpload.MultipartBody and sent with
// Workers.Scripts.Update plus option.WithRequestBody. D1Migrations is
// measured through the provider itself (provider_migrations_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"sort"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/workers"
)

// fixtureModule is a plain ES module worker for uploads made the provider's
// way.
const fixtureModule = `export default {
  async fetch(request, env) {
    return new Response(env.MODE + " " + (await env.DB.prepare("SELECT 1 AS one").first()).one);
  },
};
`

type pBinding struct {
	Type        string  `json:"type"`
	Name        string  `json:"name"`
	ID          string  `json:"id,omitempty"`
	NamespaceID string  `json:"namespace_id,omitempty"`
	BucketName  string  `json:"bucket_name,omitempty"`
	QueueName   string  `json:"queue_name,omitempty"`
	ClassName   string  `json:"class_name,omitempty"`
	Text        *string `json:"text,omitempty"`
}

type pMigration struct {
	OldTag           string   `json:"old_tag,omitempty"`
	NewTag           string   `json:"new_tag"`
	NewSqliteClasses []string `json:"new_sqlite_classes,omitempty"`
}

// multipartUpload builds the body as the provider's MultipartBody does: the
// metadata part, then one part per module with its file name and the
// module content type.
func multipartUpload(mainModule string, modules map[string][]byte, bindings []pBinding, migration *pMigration) (string, []byte) {
	meta, err := json.Marshal(struct {
		MainModule        string      `json:"main_module"`
		CompatibilityDate string      `json:"compatibility_date,omitempty"`
		Bindings          []pBinding  `json:"bindings"`
		Migrations        *pMigration `json:"migrations,omitempty"`
	}{mainModule, "2025-01-01", bindings, migration})
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part := func(name, filename, ct string, content []byte) {
		h := textproto.MIMEHeader{}
		disp := fmt.Sprintf(`form-data; name=%q`, name)
		if filename != "" {
			disp += fmt.Sprintf(`; filename=%q`, filename)
		}
		h.Set("Content-Disposition", disp)
		h.Set("Content-Type", ct)
		w, err := mw.CreatePart(h)
		if err != nil {
			panic(err)
		}
		_, _ = w.Write(content)
	}
	part("metadata", "", "application/json", meta)
	names := make([]string, 0, len(modules))
	for n := range modules {
		if n != mainModule {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range append([]string{mainModule}, names...) {
		part(n, n, "application/javascript+module", modules[n])
	}
	if err := mw.Close(); err != nil {
		panic(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

func text(s string) *string { return &s }

// providerUpload is a small worker with a D1 binding, a var and secrets.
func providerUpload(name, dbID string, secrets map[string]string, module []byte) (string, []byte) {
	bindings := []pBinding{
		{Type: "d1", Name: "DB", ID: dbID},
		{Type: "plain_text", Name: "MODE", Text: text("provider")},
	}
	for k, v := range secrets {
		bindings = append(bindings, pBinding{Type: "secret_text", Name: k, Text: text(v)})
	}
	return multipartUpload("index.js", map[string][]byte{"index.js": module}, bindings, nil)
}

// fixtureBindings are the fixture worker's bindings in the provider's
// shape, the same resources wrangler binds from wrangler.json.
func fixtureBindings(dbID, kvID, bucket, queue string) []pBinding {
	return []pBinding{
		{Type: "d1", Name: "DB", ID: dbID},
		{Type: "kv_namespace", Name: "CACHE", NamespaceID: kvID},
		{Type: "r2_bucket", Name: "FILES", BucketName: bucket},
		{Type: "queue", Name: "JOBS", QueueName: queue},
		{Type: "durable_object_namespace", Name: "COUNTER", ClassName: "Counter"},
		{Type: "plain_text", Name: "GREETING", Text: text("hello")},
	}
}

// providerCreateWorker makes the requests the provider's Worker Create makes
// for a new script with workers.dev on and one queue consumer: FindScript
// (list), the upload, the workers.dev switch, the account subdomain for the
// URL, then the consumer (list, add).
func providerCreateWorker(ctx context.Context, c *cloudflare.Client, acct, name, queueID string, ct string, body []byte) error {
	if _, err := c.Workers.Scripts.List(ctx, workers.ScriptListParams{AccountID: cloudflare.F(acct)}); err != nil {
		return err
	}
	if _, err := c.Workers.Scripts.Update(ctx, name, workers.ScriptUpdateParams{AccountID: cloudflare.F(acct)},
		option.WithRequestBody(ct, body)); err != nil {
		return err
	}
	if _, err := c.Workers.Scripts.Subdomain.New(ctx, name, workers.ScriptSubdomainNewParams{
		AccountID: cloudflare.F(acct), Enabled: cloudflare.F(true)}); err != nil {
		return err
	}
	if _, err := c.Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cloudflare.F(acct)}); err != nil {
		return err
	}
	if queueID == "" {
		return nil
	}
	if _, err := c.Queues.Consumers.Get(ctx, queueID, queues.ConsumerGetParams{AccountID: cloudflare.F(acct)}); err != nil {
		return err
	}
	_, err := c.Queues.Consumers.New(ctx, queueID, queues.ConsumerNewParams{
		AccountID: cloudflare.F(acct), Body: queues.ConsumerNewParamsBody{
			Type:       cloudflare.F(queues.ConsumerNewParamsBodyType("worker")),
			ScriptName: cloudflare.F(name),
			Settings:   cloudflare.F[any](map[string]any{"batch_size": 5}),
		}})
	return err
}
