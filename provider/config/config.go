package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/daytonaapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modaldeploy"
	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
)

// Config is the provider configuration (openinspect:<key>). Every credential is
// optional at this level: a program that only uses Cloudflare needs no Modal or
// Daytona settings, and a missing credential is reported by the first resource
// that needs it, naming the config key and its environment variable.
type Config struct {
	CloudflareAPIToken   string `pulumi:"cloudflareApiToken,optional" provider:"secret"`
	CloudflareAccountID  string `pulumi:"cloudflareAccountId,optional"`
	CloudflareAPIBaseURL string `pulumi:"cloudflareApiBaseUrl,optional"`
	WorkersDevBaseURL    string `pulumi:"workersDevBaseUrl,optional"`
	ModalTokenID         string `pulumi:"modalTokenId,optional"`
	ModalTokenSecret     string `pulumi:"modalTokenSecret,optional" provider:"secret"`
	ModalEnvironment     string `pulumi:"modalEnvironment,optional"`
	ModalServerURL       string `pulumi:"modalServerUrl,optional"`
	DaytonaAPIKey        string `pulumi:"daytonaApiKey,optional" provider:"secret"`
	DaytonaAPIURL        string `pulumi:"daytonaApiUrl,optional"`
	DaytonaTarget        string `pulumi:"daytonaTarget,optional"`
	PythonPath           string `pulumi:"pythonPath,optional"`
	CacheDir             string `pulumi:"cacheDir,optional"`
	WorkersPlan          string `pulumi:"workersPlan,optional"`
	WorkerSizeLimit      string `pulumi:"workerSizeLimit,optional"`
	// WorkerAssetsFileLimit is read by limits.go (assetFileLimit).
	WorkerAssetsFileLimit string `pulumi:"workerAssetsFileLimit,optional"`
}

// envFallbacks maps each config field to the environment variable read when the
// field is unset. They are read in Configure, not only in CheckConfig, because
// `pulumi import`, refresh and destroy configure the provider without checking it.
func (c *Config) envFallbacks() []struct {
	field *string
	env   string
} {
	return []struct {
		field *string
		env   string
	}{
		{&c.CloudflareAPIToken, "CLOUDFLARE_API_TOKEN"},
		{&c.CloudflareAccountID, "CLOUDFLARE_ACCOUNT_ID"},
		{&c.CloudflareAPIBaseURL, "CLOUDFLARE_API_BASE_URL"},
		{&c.WorkersDevBaseURL, "OPENINSPECT_WORKERS_DEV_BASE_URL"},
		{&c.ModalTokenID, "MODAL_TOKEN_ID"},
		{&c.ModalTokenSecret, "MODAL_TOKEN_SECRET"},
		{&c.ModalEnvironment, "MODAL_ENVIRONMENT"},
		{&c.ModalServerURL, "MODAL_SERVER_URL"},
		{&c.DaytonaAPIKey, "DAYTONA_API_KEY"},
		{&c.DaytonaAPIURL, "DAYTONA_API_URL"},
		{&c.DaytonaTarget, "DAYTONA_TARGET"},
		{&c.PythonPath, pyfind.EnvVar},
		{&c.CacheDir, "OPENINSPECT_CACHE_DIR"},
		{&c.WorkersPlan, "OPENINSPECT_WORKERS_PLAN"},
		{&c.WorkerSizeLimit, "OPENINSPECT_WORKER_SIZE_LIMIT"},
		{&c.WorkerAssetsFileLimit, "OPENINSPECT_WORKER_ASSETS_FILE_LIMIT"},
	}
}

// EnvVars lists every environment variable the configuration falls back to,
// in key order; tests clear them so they never depend on the caller's shell.
func EnvVars() []string {
	fallbacks := (&Config{}).envFallbacks()
	out := make([]string, len(fallbacks))
	for i, f := range fallbacks {
		out[i] = f.env
	}
	return out
}

var (
	_ infer.Annotated                    = (*Config)(nil)
	_ infer.CustomConfigure              = (*Config)(nil)
	_ infer.CustomDiff[*Config, *Config] = (*Config)(nil)
)

// Annotate documents the configuration keys in the schema.
func (c *Config) Annotate(a infer.Annotator) {
	a.Describe(c, "The provider type for the openinspect package: the credentials and endpoints of Cloudflare, Modal and Daytona, "+
		"and where the Modal CLI runs. Every key falls back to an environment variable, so `pulumi destroy`, `refresh` and "+
		"`import` work with credentials from the environment alone; changing a key updates the provider in place.")
	a.Describe(&c.CloudflareAPIToken, "Cloudflare API token with Workers Scripts, D1, KV, R2 and Queues edit permissions. Falls back to CLOUDFLARE_API_TOKEN.")
	a.Describe(&c.CloudflareAccountID, "Cloudflare account ID every Cloudflare resource lives in. Falls back to CLOUDFLARE_ACCOUNT_ID.")
	a.Describe(&c.CloudflareAPIBaseURL, "Base URL of the Cloudflare v4 API, for a regional gateway or the local emulator (for example http://127.0.0.1:8787/client/v4/). Falls back to CLOUDFLARE_API_BASE_URL, then to the public API.")
	a.Describe(&c.WorkersDevBaseURL, "Where workers are reached when it is not workers.dev. A wildcard origin such as "+
		"http://*.workers.localhost:PORT (or http://*.<account subdomain>.workers.localhost:PORT) gives each worker its own "+
		"origin, the * replaced by the script name, as the local emulator serves them; any other URL makes a worker's URL "+
		"<base>/<script name> (the emulator's older http://127.0.0.1:PORT/__workers form). Falls back to "+
		"OPENINSPECT_WORKERS_DEV_BASE_URL; empty means https://<script>.<account subdomain>.workers.dev.")
	a.Describe(&c.ModalTokenID, "Modal token ID. Falls back to MODAL_TOKEN_ID.")
	a.Describe(&c.ModalTokenSecret, "Modal token secret. Falls back to MODAL_TOKEN_SECRET.")
	a.Describe(&c.ModalEnvironment, "Modal environment the installation deploys into: 2 to 64 ASCII letters, digits, '-', '_' and '.', "+
		"starting with a letter or digit, as Modal requires. Falls back to MODAL_ENVIRONMENT.")
	a.Describe(&c.ModalServerURL, "Modal API URL, for the local emulator (http://127.0.0.1:PORT). Falls back to MODAL_SERVER_URL, then to https://api.modal.com.")
	a.Describe(&c.DaytonaAPIKey, "Daytona API key with snapshot and sandbox permissions. Falls back to DAYTONA_API_KEY.")
	a.Describe(&c.DaytonaAPIURL, "Daytona API URL. Falls back to DAYTONA_API_URL, then to the public API.")
	a.Describe(&c.DaytonaTarget, "Daytona target (region) snapshots are built for. Falls back to DAYTONA_TARGET, then to the organization's default.")
	a.Describe(&c.PythonPath, "Python interpreter (3.12 or newer) the Modal deploy runs with. Falls back to OPENINSPECT_PYTHON, then to python3.12, python3.13 and python3 on PATH, then to the versions pyenv installed (under PYENV_ROOT, `pyenv root` and ~/.pyenv).")
	a.Describe(&c.CacheDir, "Where the provider caches the Modal CLI's virtual environments. Falls back to OPENINSPECT_CACHE_DIR, then to the user cache directory (~/.cache/openinspect).")
	a.Describe(&c.WorkersPlan, "The account's Workers plan, free or paid, for the limits every Worker is checked against at preview, "+
		"before any upload: 64 (free) or 128 (paid) vars and secrets per Worker, each at most 5 KB "+
		"(https://developers.cloudflare.com/workers/platform/limits/). Falls back to OPENINSPECT_WORKERS_PLAN, then to paid.")
	a.Describe(&c.WorkerSizeLimit, "The largest Worker (all modules) an upload may be, such as 64MiB; add \" compressed\" for a limit "+
		"measured after gzip, as Cloudflare did until September 2026 (3MiB free, 10MiB paid). Falls back to "+
		"OPENINSPECT_WORKER_SIZE_LIMIT, then to 64MiB, the documented size on both plans.")
	a.Describe(&c.WorkerAssetsFileLimit, "The most static asset files one Worker version may have, checked at preview: "+
		"Cloudflare allows 20000 on Workers Free and up to 100000 on Workers Paid "+
		"(https://developers.cloudflare.com/workers/static-assets/#limits). Falls back to "+
		"OPENINSPECT_WORKER_ASSETS_FILE_LIMIT, then to 20000.")
}

// Configure fills unset keys from the environment. Clients are built on use so
// that a provider configured only for Cloudflare never touches Modal or Daytona.
func (c *Config) Configure(context.Context) error {
	c.applyEnv()
	if err := c.checkCredentialURLs(); err != nil {
		return err
	}
	if c.ModalEnvironment != "" {
		// Modal would refuse the name only on the first call that names
		// the environment, after the preview.
		if err := modalapi.CheckEnvironmentName(c.ModalEnvironment); err != nil {
			return fmt.Errorf("openinspect:modalEnvironment (or MODAL_ENVIRONMENT): %w", err)
		}
	}
	if err := cfapi.CheckWorkersDevBase(c.WorkersDevBase()); err != nil {
		return err
	}
	_, err := c.WorkerLimits()
	return err
}

// checkCredentialURLs refuses an API base URL that would carry a credential
// over plain http to another machine. Configure runs before the preview
// asks any resource anything, so the refusal costs no call and nothing is
// sent; the sandbox and Vercel URLs of the component's spec follow the same
// rule in its validation.
func (c *Config) checkCredentialURLs() error {
	for _, u := range []struct{ key, env, value, credential string }{
		{"cloudflareApiBaseUrl", "CLOUDFLARE_API_BASE_URL", c.CloudflareAPIBaseURL, "Cloudflare API token"},
		{"modalServerUrl", "MODAL_SERVER_URL", c.ModalServerURL, "Modal token"},
		{"daytonaApiUrl", "DAYTONA_API_URL", c.DaytonaAPIURL, "Daytona API key"},
	} {
		if problem := loopback.PlainHTTPProblem(u.value, u.credential); problem != "" {
			return fmt.Errorf("openinspect:%s (or %s): %s", u.key, u.env, problem)
		}
	}
	return nil
}

func (c *Config) applyEnv() {
	for _, f := range c.envFallbacks() {
		if *f.field == "" {
			*f.field = os.Getenv(f.env)
		}
	}
}

// Diff makes every configuration change an in-place update of the provider.
// The default would replace the provider, and with it every resource it
// manages, when a token is rotated; credentials and endpoints say how to reach
// the resources, not which resources they are.
func (*Config) Diff(_ context.Context, req infer.DiffRequest[*Config, *Config]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	if olds == nil {
		olds = &Config{}
	}
	if news == nil {
		news = &Config{}
	}
	detailed := map[string]p.PropertyDiff{}
	// Every key is a string; comparing field by field covers keys added later.
	ov, nv := reflect.ValueOf(*olds), reflect.ValueOf(*news)
	for i := range ov.NumField() {
		if ov.Field(i).String() != nv.Field(i).String() {
			detailed[family.PulumiName(ov.Type().Field(i))] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// CloudflareClient returns a Cloudflare client for this configuration, or an error
// that names the missing key. The framework may re-decode the configuration
// after Configure ran, so the environment fallbacks are applied here as well.
// Building a client is cheap and makes no network call.
func (c *Config) CloudflareClient() (*cfapi.Client, error) {
	resolved := c.resolved()
	switch {
	case resolved.CloudflareAPIToken == "":
		return nil, fmt.Errorf("cloudflare credentials missing: set openinspect:cloudflareApiToken (or CLOUDFLARE_API_TOKEN)")
	case resolved.CloudflareAccountID == "":
		return nil, fmt.Errorf("cloudflare account missing: set openinspect:cloudflareAccountId (or CLOUDFLARE_ACCOUNT_ID)")
	}
	return cfapi.New(cfapi.Options{
		APIToken:  resolved.CloudflareAPIToken,
		AccountID: resolved.CloudflareAccountID,
		BaseURL:   resolved.CloudflareAPIBaseURL,
	})
}

// WorkersDevBase is workersDevBaseUrl (or its environment fallback) without
// a trailing slash; empty means scripts answer on workers.dev.
func (c *Config) WorkersDevBase() string {
	resolved := c.resolved()
	return strings.TrimRight(resolved.WorkersDevBaseURL, "/")
}

// WorkerURL is where a script with workers.dev enabled answers.
func (c *Config) WorkerURL(ctx context.Context, client *cfapi.Client, script string) (string, error) {
	if base := c.WorkersDevBase(); base != "" {
		return cfapi.WorkersDevURL(base, "", script), nil
	}
	sub, err := client.AccountSubdomain(ctx)
	if err != nil || sub == "" {
		return "", err
	}
	return cfapi.WorkersDevURL("", sub, script), nil
}

// ModalClient returns a Modal client for environment ("" means the
// configuration's modalEnvironment, else the workspace's default), or an
// error naming the missing keys. It makes no network call.
func (c *Config) ModalClient(environment string) (*modalapi.Client, error) {
	resolved := c.resolved()
	if resolved.ModalTokenID == "" || resolved.ModalTokenSecret == "" {
		return nil, fmt.Errorf("modal credentials missing: set openinspect:modalTokenId and openinspect:modalTokenSecret (or MODAL_TOKEN_ID and MODAL_TOKEN_SECRET)")
	}
	return modalapi.New(modalapi.Options{
		TokenID:     resolved.ModalTokenID,
		TokenSecret: resolved.ModalTokenSecret,
		Environment: c.ModalEnvironmentOr(environment),
		ServerURL:   resolved.ModalServerURL,
	})
}

// ModalEnvironmentOr is environment, else the configured modalEnvironment.
func (c *Config) ModalEnvironmentOr(environment string) string {
	if environment != "" {
		return environment
	}
	return c.resolved().ModalEnvironment
}

// ModalTarget is where `modal deploy` goes, for the deploy runner.
func (c *Config) ModalTarget(environment string) modaldeploy.Target {
	resolved := c.resolved()
	return modaldeploy.Target{
		ServerURL:   resolved.ModalServerURL,
		TokenID:     resolved.ModalTokenID,
		TokenSecret: resolved.ModalTokenSecret,
		Environment: c.ModalEnvironmentOr(environment),
	}
}

// DaytonaOptions are the configured Daytona key, API URL and target
// (daytonaApiKey, daytonaApiUrl, daytonaTarget, or their environment
// fallbacks), blanks left blank: a DaytonaSnapshot given its own
// credentials falls back to them field by field.
func (c *Config) DaytonaOptions() daytonaapi.Options {
	resolved := c.resolved()
	return daytonaapi.Options{APIKey: resolved.DaytonaAPIKey, APIURL: resolved.DaytonaAPIURL, Target: resolved.DaytonaTarget}
}

// Python is the interpreter for Modal deploys (pythonPath, its environment
// fallback, else the first suitable one on PATH or in pyenv; see
// pyfind.Find), checked to be 3.12 or newer.
func (c *Config) Python() (string, error) {
	path, _, err := pyfind.Find(c.resolved().PythonPath)
	return path, err
}

// CacheRoot is the provider's cache directory (cacheDir, its environment
// fallback, else <user cache dir>/openinspect).
func (c *Config) CacheRoot() (string, error) {
	if dir := c.resolved().CacheDir; dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set openinspect:cacheDir (or OPENINSPECT_CACHE_DIR): %w", err)
	}
	return filepath.Join(base, "openinspect"), nil
}

// resolved is a copy with the environment fallbacks applied: the framework
// may re-decode the configuration after Configure ran.
func (c *Config) resolved() Config {
	r := *c
	r.applyEnv()
	return r
}

// FromContext is the configuration of the provider serving ctx.
func FromContext(ctx context.Context) *Config { return infer.GetConfig[*Config](ctx) }

// Cloudflare returns a Cloudflare client for the provider serving ctx.
func Cloudflare(ctx context.Context) (*cfapi.Client, error) {
	return FromContext(ctx).CloudflareClient()
}
