package pinsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/tarball"
)

// Paths of upstream's tree the sync reads.
const (
	productionDir = "terraform/environments/production"
	migrationsDir = "terraform/d1/migrations"
)

// tree is upstream's files at one commit, extracted from a git checkout
// into a directory of its own (never a work tree: what is committed, not
// what is checked out).
type tree struct {
	root       string
	commit     string // the full commit ID
	commitDate string // RFC 3339, the committer date
}

// ErrNoCommit is returned when the checkout does not hold the commit.
var ErrNoCommit = errors.New("the checkout does not hold the commit")

// ErrNotUpstream is returned when the commit's tree has no upstream Terraform.
var ErrNotUpstream = errors.New("the tree has no terraform/environments/production")

// extract writes commit's tree from the git checkout source (a work tree or
// a bare clone) into dir. Only terraform/ and packages/ are extracted: all
// the sync reads.
func extract(ctx context.Context, source, commit, dir string) (*tree, error) {
	if _, err := os.Stat(source); err != nil {
		return nil, fmt.Errorf("SOURCE %s: %w", source, err)
	}
	git := func(args ...string) ([]byte, error) {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", source}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("SOURCE %s is not a git checkout of upstream: %w", source, err)
	}
	if commit == "" {
		return nil, errors.New("COMMIT is required: the upstream commit to move the pin to")
	}
	full, err := git("rev-parse", "--verify", "--quiet", commit+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("%w: %s has no commit %s; fetch it there first (git -C %s fetch origin %s)",
			ErrNoCommit, source, commit, source, commit)
	}
	t := &tree{root: dir, commit: strings.TrimSpace(string(full))}
	date, err := git("show", "-s", "--format=%cI", t.commit)
	if err != nil {
		return nil, err
	}
	t.commitDate = strings.TrimSpace(string(date))
	listing, err := git("ls-tree", "--name-only", t.commit, productionDir+"/")
	if err != nil || !bytes.Contains(listing, []byte(".tf\n")) {
		return nil, fmt.Errorf("%w: commit %s of %s has no %s/*.tf, so it is not a background-agents tree this sync can read (a wrong SOURCE, or a commit from before upstream's Terraform)",
			ErrNotUpstream, t.commit, source, productionDir)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", "-C", source, "archive", "--format=tar", t.commit, "terraform", "packages")
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Links are skipped: nothing the sync reads is one.
	untarErr := tarball.Extract(pipe, dir, false)
	_, _ = io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git archive %s: %w: %s", t.commit, err, strings.TrimSpace(stderr.String()))
	}
	if untarErr != nil {
		return nil, fmt.Errorf("extracting %s: %w", t.commit, untarErr)
	}
	return t, nil
}

func (t *tree) path(rel string) string { return filepath.Join(t.root, filepath.FromSlash(rel)) }

func (t *tree) read(rel string) ([]byte, error) { return os.ReadFile(t.path(rel)) }
