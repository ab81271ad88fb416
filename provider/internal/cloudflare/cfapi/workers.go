package cfapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
)

// Workers API error codes the provider branches on.
const (
	CodeScriptNotFound            = 10007
	CodeMigrationTagPrecondition  = 10079
	CodeServiceBindingUnresolved  = 10143
	CodeServiceBindingNotFound    = 10144
	CodeDurableObjectClassMissing = 10061
	CodeClassAlreadyDeclared      = 10074
)

// Binding is one entry of a script's metadata.bindings, in the API's shape.
type Binding struct {
	Type        string  `json:"type"`
	Name        string  `json:"name"`
	ID          string  `json:"id,omitempty"`           // d1
	NamespaceID string  `json:"namespace_id,omitempty"` // kv_namespace
	BucketName  string  `json:"bucket_name,omitempty"`  // r2_bucket
	QueueName   string  `json:"queue_name,omitempty"`   // queue
	Service     string  `json:"service,omitempty"`      // service
	Environment string  `json:"environment,omitempty"`  // service
	ClassName   string  `json:"class_name,omitempty"`   // durable_object_namespace
	ScriptName  string  `json:"script_name,omitempty"`  // durable_object_namespace in another script
	Text        *string `json:"text,omitempty"`         // plain_text, secret_text; "" is a valid value
	BindingKinds
}

// Migration is a single-step Durable Object migration.
type Migration struct {
	OldTag           string   `json:"old_tag,omitempty"`
	NewTag           string   `json:"new_tag"`
	NewSqliteClasses []string `json:"new_sqlite_classes,omitempty"`
	DeletedClasses   []string `json:"deleted_classes,omitempty"`
}

// Module is one file of an ES module worker. Its source is one of Content;
// Text, the input's string sent as it is (no copy of a bundle given inline);
// or Path, a file read while the upload is sent.
type Module struct {
	Name    string
	Content []byte
	Text    string
	Path    string
}

// ScriptUpload is everything one script upload carries.
type ScriptUpload struct {
	Name               string
	MainModule         string
	Modules            []Module // the main module first
	CompatibilityDate  string
	CompatibilityFlags []string
	Bindings           []Binding
	Migrations         *Migration
	// Tags label the script (cloudflare-go/v4 workers.ScriptUpdateParamsMetadata.Tags);
	// the provider keeps its ownership evidence there.
	Tags []string
	// Assets are the static assets' completion token and config (assets.go);
	// an assets-only worker has no MainModule and no Modules.
	Assets *ScriptAssets
	Config ScriptConfig
}

type scriptMetadata struct {
	MainModule         string     `json:"main_module,omitempty"`
	CompatibilityDate  string     `json:"compatibility_date,omitempty"`
	CompatibilityFlags []string   `json:"compatibility_flags,omitempty"`
	Bindings           []Binding  `json:"bindings"`
	Migrations         *Migration `json:"migrations,omitempty"`
	// Tags are always sent: tags are a script-level setting that an upload
	// without them leaves in place, so dropping the last tag must send [].
	Tags []string `json:"tags"`

	Assets *ScriptAssets `json:"assets,omitempty"`
	ScriptConfig
}

// metadata is the upload's metadata part.
func (u ScriptUpload) metadata() ([]byte, error) {
	main := u.MainModule
	if len(u.Modules) == 0 {
		main = "" // an assets-only worker
	}
	meta, err := json.Marshal(scriptMetadata{
		MainModule:         main,
		CompatibilityDate:  u.CompatibilityDate,
		CompatibilityFlags: u.CompatibilityFlags,
		Bindings:           nonNil(u.Bindings),
		Migrations:         u.Migrations,
		Tags:               nonNilTags(u.Tags),
		Assets:             u.Assets,
		ScriptConfig:       u.Config.withDefaults(),
	})
	if err != nil {
		return nil, fmt.Errorf("encoding script metadata: %w", err)
	}
	return meta, nil
}

// body is the upload's multipart/form-data body: the metadata part, then
// one part per module. cloudflare-go v4 cannot send file parts itself, so
// the body is built here and handed to the typed method.
func (u ScriptUpload) body() (*uploadBody, error) {
	meta, err := u.metadata()
	if err != nil {
		return nil, err
	}
	return u.uploadBody(meta)
}

// MultipartBody is the upload's body in one buffer, exactly the bytes
// UploadScript streams.
func (u ScriptUpload) MultipartBody() (contentType string, body []byte, err error) {
	b, err := u.body()
	if err != nil {
		return "", nil, err
	}
	r, _ := b.open()
	defer r.Close()
	var buf bytes.Buffer
	buf.Grow(int(b.size))
	if _, err := buf.ReadFrom(r); err != nil {
		return "", nil, err
	}
	return b.contentType, buf.Bytes(), nil
}

func nonNilTags(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

func nonNil(b []Binding) []Binding {
	if b == nil {
		return []Binding{}
	}
	return b
}

func writePart(mw *multipart.Writer, name, filename, contentType string, content []byte) error {
	h := textproto.MIMEHeader{}
	disposition := fmt.Sprintf(`form-data; name=%q`, name)
	if filename != "" {
		disposition += fmt.Sprintf(`; filename=%q`, filename)
	}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", contentType)
	w, err := mw.CreatePart(h)
	if err != nil {
		return fmt.Errorf("writing part %s: %w", name, err)
	}
	_, err = w.Write(content)
	return err
}

var (
	cjsModule  = regexp.MustCompile(`\.cjs$`)
	wasmModule = regexp.MustCompile(`\.wasm$`)
	textModule = regexp.MustCompile(`\.(txt|html|md)$`)
)

func moduleContentType(name string) string {
	switch {
	case cjsModule.MatchString(name):
		return "application/javascript"
	case wasmModule.MatchString(name):
		return "application/wasm"
	case textModule.MatchString(name):
		return "text/plain"
	}
	return "application/javascript+module"
}

// Script is what the API reports about an uploaded script.
type Script struct {
	Name       string
	Etag       string
	ModifiedOn time.Time
}

// UploadScript creates or replaces a script with all its bindings.
func (c *Client) UploadScript(ctx context.Context, u ScriptUpload) (Script, error) {
	body, err := u.body()
	if err != nil {
		return Script{}, err
	}
	res, err := c.api.Workers.Scripts.Update(ctx, u.Name, workers.ScriptUpdateParams{AccountID: cf.F(c.accountID)},
		option.WithRequestBody(body.contentType, []byte{}), option.WithMiddleware(body.attach))
	if err != nil {
		return Script{}, wrap(fmt.Sprintf("upload worker %q", u.Name), err)
	}
	return Script{Name: u.Name, Etag: res.Etag, ModifiedOn: res.ModifiedOn}, nil
}

// ScriptSettings are a script's configuration as GET .../settings reports
// it: what Read compares with the state.
type ScriptSettings struct {
	Bindings           []Binding
	CompatibilityDate  string
	CompatibilityFlags []string
	MigrationTag       string
	Tags               []string
	Config             ScriptConfig
}

// GetScriptSettings reads a script's bindings, migration tag and settings
// with one request.
func (c *Client) GetScriptSettings(ctx context.Context, name string) (ScriptSettings, error) {
	res, err := c.api.Workers.Scripts.ScriptAndVersionSettings.Get(ctx, name,
		workers.ScriptScriptAndVersionSettingGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return ScriptSettings{}, wrap(fmt.Sprintf("read settings of worker %q", name), err)
	}
	settings, err := decodeSettings([]byte(res.JSON.RawJSON()))
	if err != nil {
		return ScriptSettings{}, fmt.Errorf("decoding settings of worker %q: %w", name, err)
	}
	return settings, nil
}

// DeleteScript deletes a script. force also removes its Durable Object
// namespaces and the links other scripts hold to it, which is what deleting
// an installation means; without it a destroy would wedge on those links.
func (c *Client) DeleteScript(ctx context.Context, name string) error {
	_, err := c.api.Workers.Scripts.Delete(ctx, name, workers.ScriptDeleteParams{AccountID: cf.F(c.accountID), Force: cf.F(true)})
	if err = wrap(fmt.Sprintf("delete worker %q", name), err); err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// SetSchedules replaces a script's cron triggers; an empty list removes them.
func (c *Client) SetSchedules(ctx context.Context, name string, crons []string) error {
	body := make([]workers.ScriptScheduleUpdateParamsBody, 0, len(crons))
	for _, cron := range crons {
		body = append(body, workers.ScriptScheduleUpdateParamsBody{Cron: cf.F(cron)})
	}
	_, err := c.api.Workers.Scripts.Schedules.Update(ctx, name, workers.ScriptScheduleUpdateParams{
		AccountID: cf.F(c.accountID), Body: body})
	return wrap(fmt.Sprintf("set cron triggers of worker %q", name), err)
}

// SetWorkersDev turns the script's workers.dev route on or off.
func (c *Client) SetWorkersDev(ctx context.Context, name string, enabled bool) error {
	_, err := c.api.Workers.Scripts.Subdomain.New(ctx, name, workers.ScriptSubdomainNewParams{
		AccountID: cf.F(c.accountID), Enabled: cf.F(enabled)})
	return wrap(fmt.Sprintf("set workers.dev for worker %q", name), err)
}

// AccountSubdomain is the account's workers.dev subdomain ("" if none).
func (c *Client) AccountSubdomain(ctx context.Context) (string, error) {
	res, err := c.api.Workers.Subdomains.Get(ctx, workers.SubdomainGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		if IsNotFound(wrap("", err)) {
			return "", nil
		}
		return "", wrap("read the account's workers.dev subdomain", err)
	}
	return res.Subdomain, nil
}

// WorkersDevURL is a script's URL under a base URL (emulators, tests) or the
// account's workers.dev subdomain. A base with a wildcard origin,
// http://*.workers.localhost:8787, gives each script its own origin as
// workers.dev does (the * becomes the script's name); any other base gives
// <base>/<script>, the older path form.
func WorkersDevURL(baseURL, subdomain, script string) string {
	if baseURL != "" {
		if strings.Contains(baseURL, "*") {
			return strings.Replace(baseURL, "*", script, 1)
		}
		return baseURL + "/" + script
	}
	return fmt.Sprintf("https://%s.%s.workers.dev", script, subdomain)
}

// CheckWorkersDevBase reports what is wrong with a workersDevBaseUrl: a
// wildcard one must be scheme://*.<host>[:port], the * the whole first
// label of the host, with no path.
func CheckWorkersDevBase(baseURL string) error {
	if !strings.Contains(baseURL, "*") {
		return nil
	}
	u, err := url.Parse(strings.Replace(baseURL, "*", "x", 1))
	switch {
	case err != nil:
		return fmt.Errorf("workersDevBaseUrl %q is not a URL: %w", baseURL, err)
	case strings.Count(baseURL, "*") != 1 || !strings.HasPrefix(baseURL, u.Scheme+"://*."):
		return fmt.Errorf("workersDevBaseUrl %q: a wildcard base has one *, the first label of the host (http://*.workers.localhost:8787)", baseURL)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("workersDevBaseUrl %q: the scheme must be http or https", baseURL)
	case strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("workersDevBaseUrl %q: a wildcard base is an origin, without a path, query or user", baseURL)
	}
	return nil
}
