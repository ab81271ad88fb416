package config

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
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
	DaytonaAPIKey        string `pulumi:"daytonaApiKey,optional" provider:"secret"`
	DaytonaAPIURL        string `pulumi:"daytonaApiUrl,optional"`
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
		{&c.DaytonaAPIKey, "DAYTONA_API_KEY"},
		{&c.DaytonaAPIURL, "DAYTONA_API_URL"},
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
	a.Describe(&c.CloudflareAPIToken, "Cloudflare API token with Workers Scripts, D1, KV, R2 and Queues edit permissions. Falls back to CLOUDFLARE_API_TOKEN.")
	a.Describe(&c.CloudflareAccountID, "Cloudflare account ID every Cloudflare resource lives in. Falls back to CLOUDFLARE_ACCOUNT_ID.")
	a.Describe(&c.CloudflareAPIBaseURL, "Base URL of the Cloudflare v4 API, for a regional gateway or the local emulator (for example http://127.0.0.1:8787/client/v4/). Falls back to CLOUDFLARE_API_BASE_URL, then to the public API.")
	a.Describe(&c.WorkersDevBaseURL, "Where workers are reached when it is not workers.dev: a worker's URL becomes <base>/<script name>. "+
		"For the local emulator, which serves each script at http://127.0.0.1:PORT/__workers/<script>. Falls back to "+
		"OPENINSPECT_WORKERS_DEV_BASE_URL; empty means https://<script>.<account subdomain>.workers.dev.")
	a.Describe(&c.ModalTokenID, "Modal token ID. Falls back to MODAL_TOKEN_ID.")
	a.Describe(&c.ModalTokenSecret, "Modal token secret. Falls back to MODAL_TOKEN_SECRET.")
	a.Describe(&c.ModalEnvironment, "Modal environment the installation deploys into. Falls back to MODAL_ENVIRONMENT.")
	a.Describe(&c.DaytonaAPIKey, "Daytona API key with snapshot and sandbox permissions. Falls back to DAYTONA_API_KEY.")
	a.Describe(&c.DaytonaAPIURL, "Daytona API URL. Falls back to DAYTONA_API_URL, then to the public API.")
}

// Configure fills unset keys from the environment. Clients are built on use so
// that a provider configured only for Cloudflare never touches Modal or Daytona.
func (c *Config) Configure(context.Context) error {
	c.applyEnv()
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
			detailed[common.PulumiName(ov.Type().Field(i))] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// CloudflareClient returns a Cloudflare client for this configuration, or an error
// that names the missing key. The framework may re-decode the configuration
// after Configure ran, so the environment fallbacks are applied here as well.
// Building a client is cheap and makes no network call.
func (c *Config) CloudflareClient() (*cfapi.Client, error) {
	resolved := *c
	resolved.applyEnv()
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
	resolved := *c
	resolved.applyEnv()
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

// FromContext is the configuration of the provider serving ctx.
func FromContext(ctx context.Context) *Config { return infer.GetConfig[*Config](ctx) }

// Cloudflare returns a Cloudflare client for the provider serving ctx.
func Cloudflare(ctx context.Context) (*cfapi.Client, error) {
	return FromContext(ctx).CloudflareClient()
}
