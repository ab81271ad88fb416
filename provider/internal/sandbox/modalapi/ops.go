package modalapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	modal "github.com/modal-labs/libmodal/modal-go"
	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// EnvironmentInfo is what the control plane needs to know about the
// environment: the workspace and web suffix its endpoint URLs are made of.
type EnvironmentInfo struct {
	Name      string // resolved: the workspace default when Options.Environment is ""
	Workspace string
	WebSuffix string // "" for an environment whose URLs carry no suffix
}

// Environment looks the environment up (it is never created here) and the
// workspace the token belongs to.
func (c *Client) Environment(ctx context.Context) (EnvironmentInfo, error) {
	raw, _, err := c.connect(ctx)
	if err != nil {
		return EnvironmentInfo{}, err
	}
	env, err := raw.EnvironmentGetOrCreate(ctx, pb.EnvironmentGetOrCreateRequest_builder{
		DeploymentName: c.opts.Environment, ObjectCreationType: pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED,
	}.Build())
	if err != nil {
		return EnvironmentInfo{}, fmt.Errorf("modal: looking up environment %q: %w", c.envLabel(), err)
	}
	ws, err := raw.WorkspaceNameLookup(ctx, &emptypb.Empty{})
	if err != nil {
		return EnvironmentInfo{}, fmt.Errorf("modal: looking up the workspace of the token: %w", err)
	}
	md := env.GetMetadata()
	return EnvironmentInfo{Name: md.GetName(), Workspace: ws.GetUsername(), WebSuffix: md.GetSettings().GetWebhookSuffix()}, nil
}

// UpsertSecret makes the named secret hold exactly values, creating it if
// needed (what `modal secret create --force` does). Errors never carry a
// value.
func (c *Client) UpsertSecret(ctx context.Context, name string, values map[string]string) error {
	raw, _, err := c.connect(ctx)
	if err != nil {
		return err
	}
	_, err = raw.SecretGetOrCreate(ctx, pb.SecretGetOrCreateRequest_builder{
		DeploymentName:     name,
		EnvironmentName:    c.opts.Environment,
		ObjectCreationType: pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS,
		EnvDict:            values,
	}.Build())
	if err != nil {
		return fmt.Errorf("modal: upserting secret %q in environment %q: %w", name, c.envLabel(), err)
	}
	return nil
}

// SecretKeys reports which of want the named secret holds, and whether the
// secret exists at all. Modal never lists a secret's keys; it only checks
// keys a caller requires, so that is what this does: one call when all are
// there, one more per key otherwise.
func (c *Client) SecretKeys(ctx context.Context, name string, want []string) (present []string, found bool, err error) {
	_, sdk, err := c.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	lookup := func(keys []string) (bool, error) {
		_, err := sdk.Secrets.FromName(ctx, name, &modal.SecretFromNameParams{Environment: c.opts.Environment, RequiredKeys: keys})
		if notFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("modal: reading secret %q in environment %q: %w", name, c.envLabel(), err)
		}
		return true, nil
	}
	if ok, err := lookup(want); err != nil || ok {
		return slices.Clone(want), ok, err
	}
	if ok, err := lookup(nil); err != nil || !ok {
		return nil, false, err
	}
	for _, k := range want {
		ok, err := lookup([]string{k})
		if err != nil {
			return nil, true, err
		}
		if ok {
			present = append(present, k)
		}
	}
	return present, true, nil
}

// DeleteSecret deletes the named secret; a missing one is not an error.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	_, sdk, err := c.connect(ctx)
	if err != nil {
		return err
	}
	err = sdk.Secrets.Delete(ctx, name, &modal.SecretDeleteParams{Environment: c.opts.Environment, AllowMissing: true})
	if err != nil && !notFound(err) {
		return fmt.Errorf("modal: deleting secret %q in environment %q: %w", name, c.envLabel(), err)
	}
	return nil
}

// App is a deployed app.
type App struct {
	ID    string
	Name  string
	State string // deployed, stopped, ephemeral, ... (Modal's AppState without the prefix, lower case)
}

// DeployedApp finds the live app deployed under name; found is false when
// there is none (never deployed, or stopped).
func (c *Client) DeployedApp(ctx context.Context, name string) (App, bool, error) {
	raw, sdk, err := c.connect(ctx)
	if err != nil {
		return App{}, false, err
	}
	app, err := sdk.Apps.FromName(ctx, name, &modal.AppFromNameParams{Environment: c.opts.Environment})
	if notFound(err) {
		return App{}, false, nil
	}
	if err != nil {
		return App{}, false, fmt.Errorf("modal: looking up app %q in environment %q: %w", name, c.envLabel(), err)
	}
	out := App{ID: app.AppID, Name: name, State: "unknown"}
	list, err := raw.AppList(ctx, pb.AppListRequest_builder{EnvironmentName: c.opts.Environment}.Build())
	if err != nil {
		return App{}, false, fmt.Errorf("modal: listing apps in environment %q: %w", c.envLabel(), err)
	}
	for _, a := range list.GetApps() {
		if a.GetAppId() == app.AppID {
			out.State = stateWord(a.GetState())
		}
	}
	return out, true, nil
}

func stateWord(s pb.AppState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "APP_STATE_"))
}

// StopApp stops an app and its containers, as `modal app stop` does. An app
// that no longer exists is not an error.
func (c *Client) StopApp(ctx context.Context, appID string) error {
	raw, _, err := c.connect(ctx)
	if err != nil {
		return err
	}
	_, err = raw.AppStop(ctx, pb.AppStopRequest_builder{AppId: appID, Source: pb.AppStopSource_APP_STOP_SOURCE_CLI}.Build())
	if err != nil && !notFound(err) {
		return fmt.Errorf("modal: stopping app %s: %w", appID, err)
	}
	return nil
}

// WebURL is the URL of a deployed web endpoint (function is the Python
// function's name, e.g. api_health).
func (c *Client) WebURL(ctx context.Context, app, function string) (string, error) {
	_, sdk, err := c.connect(ctx)
	if err != nil {
		return "", err
	}
	fn, err := sdk.Functions.FromName(ctx, app, function, &modal.FunctionFromNameParams{Environment: c.opts.Environment})
	if err != nil {
		return "", fmt.Errorf("modal: looking up function %s of app %q in environment %q: %w", function, app, c.envLabel(), err)
	}
	u := fn.GetWebURL()
	if u == "" {
		return "", fmt.Errorf("modal: function %s of app %q is not a web endpoint", function, app)
	}
	return u, nil
}

// TerminateSandboxes terminates the running sandboxes of an app that carry
// every one of tags (nil: all of them) and reports how many it terminated.
func (c *Client) TerminateSandboxes(ctx context.Context, appID string, tags map[string]string) (int, error) {
	_, sdk, err := c.connect(ctx)
	if err != nil {
		return 0, err
	}
	seq, err := sdk.Sandboxes.List(ctx, &modal.SandboxListParams{AppID: appID, Tags: tags, Environment: c.opts.Environment})
	if err != nil {
		return 0, fmt.Errorf("modal: listing sandboxes of app %s: %w", appID, err)
	}
	// Collect first: terminating while paging would move the cursor's
	// ground under it.
	var sandboxes []*modal.Sandbox
	for sb, err := range seq {
		if err != nil {
			return 0, fmt.Errorf("modal: listing sandboxes of app %s: %w", appID, err)
		}
		sandboxes = append(sandboxes, sb)
	}
	n := 0
	var errs []error
	for _, sb := range sandboxes {
		if _, err := sb.Terminate(ctx, nil); err != nil {
			if !notFound(err) {
				errs = append(errs, fmt.Errorf("modal: terminating sandbox %s: %w", sb.SandboxID, err))
			}
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// DeleteImage deletes an image; a missing one is not an error.
func (c *Client) DeleteImage(ctx context.Context, imageID string) error {
	_, sdk, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if err := sdk.Images.Delete(ctx, imageID, nil); err != nil && !notFound(err) {
		return fmt.Errorf("modal: deleting image %s: %w", imageID, err)
	}
	return nil
}

// SecretNames lists the names of the environment's named secrets that
// start with prefix. Modal pages the list newest first by creation time.
func (c *Client) SecretNames(ctx context.Context, prefix string) ([]string, error) {
	raw, _, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	const page = 100
	var names []string
	seen := map[string]bool{}
	var before float64
	for {
		req := pb.SecretListRequest_builder{EnvironmentName: c.opts.Environment,
			Pagination: pb.ListPagination_builder{MaxObjects: page, CreatedBefore: before}.Build()}.Build()
		resp, err := raw.SecretList(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("modal: listing secrets in environment %q: %w", c.envLabel(), err)
		}
		fresh := 0
		for _, it := range resp.GetItems() {
			if seen[it.GetSecretId()] {
				continue
			}
			seen[it.GetSecretId()] = true
			fresh++
			if strings.HasPrefix(it.GetLabel(), prefix) {
				names = append(names, it.GetLabel())
			}
			if before == 0 || it.GetCreatedAt() < before {
				before = it.GetCreatedAt()
			}
		}
		// A short page is the last; a page of nothing new means equal
		// timestamps at a page boundary, which paging cannot get past.
		if len(resp.GetItems()) < page || fresh == 0 {
			break
		}
	}
	slices.Sort(names)
	return names, nil
}
