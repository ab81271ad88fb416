package modaldeploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
)

// UVVersion is the uv the recipe runs, pinned.
const UVVersion = builder.UVVersion

// Target is where a deploy goes. Its values reach the child processes through
// their environment only: never their arguments, never a log line.
type Target struct {
	ServerURL   string // "" = Modal's default
	TokenID     string
	TokenSecret string
	Environment string // "" = the workspace's default
}

// Runner deploys apps: a builder runner (the same settings: Python and
// CacheDir required, Progress, Redact, OutputLines, Timeout) whose Label
// is always "modal" and whose Redact blanks the token secret too.
type Runner builder.Runner

// Result says what a run did.
type Result struct {
	// Venv is the virtual environment the steps ran in.
	Venv string
	// Reused is true when the environment came from the cache and nothing
	// was installed.
	Reused bool
	// Setup and Deploy are how long preparing the environment and running
	// the two steps took.
	Setup, Deploy time.Duration
}

// AppFile is the entry point both steps run.
const AppFile = "deploy.py"

// builder is the shared runner configured for a deploy to t.
func (r *Runner) builder(t Target) *builder.Runner {
	b := builder.Runner(*r)
	b.Label, b.Redact = "modal", append([]string{t.TokenSecret}, r.Redact...)
	return &b
}

// Run deploys the app in appDir (packages/modal-infra of a checkout, with
// deploy.py and uv.lock): it prepares the environment, then runs
// `python deploy.py --build-sandbox-image` and `modal deploy deploy.py` in
// appDir. Nothing is written into appDir; it may be read-only.
func (r *Runner) Run(ctx context.Context, appDir string, t Target) (Result, error) {
	var res Result
	if r.Python == "" || r.CacheDir == "" {
		return res, errors.New("modaldeploy: Runner needs Python and CacheDir")
	}
	if t.TokenID == "" || t.TokenSecret == "" {
		return res, errors.New("modaldeploy: a Modal token ID and secret are required")
	}
	appDir, err := filepath.Abs(appDir)
	if err != nil {
		return res, fmt.Errorf("modaldeploy: %w", err)
	}
	for _, f := range []string{AppFile, "uv.lock"} {
		if _, err := os.Stat(filepath.Join(appDir, f)); err != nil {
			return res, fmt.Errorf("modaldeploy: %s is not a Modal app directory: %w", appDir, err)
		}
	}
	b := r.builder(t)
	start := time.Now()
	venv, err := b.Environment(ctx, appDir)
	if err != nil {
		return res, err
	}
	res.Venv, res.Reused, res.Setup = venv.Dir, venv.Reused, time.Since(start)

	start = time.Now()
	env := r.childEnv(venv, t)
	python := venv.Python()
	for _, s := range []builder.Step{
		{Name: "python deploy.py --build-sandbox-image", Args: []string{python, AppFile, "--build-sandbox-image"}},
		{Name: "modal deploy deploy.py", Args: []string{python, "-m", "modal", "deploy", AppFile}},
	} {
		if r.Progress != nil {
			r.Progress("modal: " + s.Name)
		}
		s.Dir, s.Env, s.Stream = appDir, env, true
		if err := b.Run(ctx, s); err != nil {
			return res, err
		}
	}
	res.Deploy = time.Since(start)
	if r.Progress != nil {
		r.Progress("modal: deployed")
	}
	return res, nil
}

// childEnv is what the deploy steps add to the builder's base environment:
// the cached environment, the Modal target (and nothing of the caller's own
// Modal settings: MODAL_CONFIG_PATH points at a file that does not exist,
// so ~/.modal.toml is not read).
func (r *Runner) childEnv(venv builder.Venv, t Target) []string {
	env := append(venv.Env(),
		"COLUMNS=160", // long enough for URLs and error lines
		"MODAL_CONFIG_PATH="+filepath.Join(r.CacheDir, "no-modal-config.toml"),
		"MODAL_TOKEN_ID="+t.TokenID,
		"MODAL_TOKEN_SECRET="+t.TokenSecret,
	)
	if t.ServerURL != "" {
		env = append(env, "MODAL_SERVER_URL="+t.ServerURL)
	}
	if t.Environment != "" {
		env = append(env, "MODAL_ENVIRONMENT="+t.Environment)
	}
	return env
}
