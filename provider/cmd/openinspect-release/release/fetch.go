package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/tarball"
)

// fetched is upstream's tree at the commit, as a tar file with paths relative
// to the checkout root, and what vouches for it being that commit.
type fetched struct {
	tarPath string
	// provenance says where the tree came from and how its commit is known.
	provenance string
	// proven is true when the source itself names the commit (a git object,
	// or a tarball whose git-archive header carries it).
	proven bool
}

// fetch brings upstream at commit into work/upstream.tar. source is a local
// git directory (a clone or a bare mirror), a local tarball, a tarball URL,
// or a git URL.
func fetch(ctx context.Context, source, commit, work string, log io.Writer) (*fetched, error) {
	out := filepath.Join(work, "upstream.tar")
	if info, err := os.Stat(source); err == nil {
		name := recordedSource(source)
		if info.IsDir() {
			return gitArchive(ctx, source, commit, out, origin{"local git directory " + source, "local git directory " + name})
		}
		f, err := os.Open(source)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return normalizeTarball(f, commit, out, origin{"tarball " + source, "tarball " + name})
	}
	if !strings.Contains(source, "://") && !strings.HasPrefix(source, "git@") {
		return nil, fmt.Errorf("-source %s: no such file or directory, and not a URL", source)
	}
	if isTarballURL(source) {
		fmt.Fprintf(log, "downloading %s\n", source)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
		if err != nil {
			return nil, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloading %s: %w", source, err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("downloading %s: %s", source, res.Status)
		}
		return normalizeTarball(res.Body, commit, out, origin{"tarball " + source, "tarball " + recordedSource(source)})
	}
	// A git URL: fetch just the commit (GitHub serves any reachable commit by
	// its ID), then archive it.
	mirror := filepath.Join(work, "fetch.git")
	if err := run(ctx, work, log, "git", "init", "--quiet", "--bare", mirror); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "fetching %s from %s\n", commit, source)
	if err := run(ctx, mirror, log, "git", "fetch", "--quiet", "--depth", "1", "--no-tags", source, commit); err != nil {
		return nil, fmt.Errorf("fetching commit %s from %s: %w", commit, source, err)
	}
	return gitArchive(ctx, mirror, commit, out, origin{"git " + source, "git " + recordedSource(source)})
}

func isTarballURL(u string) bool {
	for _, suffix := range []string{".tar.gz", ".tgz", ".tar"} {
		if strings.HasSuffix(u, suffix) {
			return true
		}
	}
	return strings.Contains(u, "/tarball/") || strings.Contains(u, "/archive/")
}

// isGitDir is true for a work tree's root and for a bare clone or mirror;
// not for a plain directory inside some other repository (a test fixture).
func isGitDir(ctx context.Context, dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return true
	}
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--is-bare-repository").Output()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// gitArchive writes the commit's tree (not a work tree's files) as a tar.
func gitArchive(ctx context.Context, dir, commit, out string, from origin) (*fetched, error) {
	what := from.what
	resolved, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil || strings.TrimSpace(string(resolved)) != commit {
		return nil, fmt.Errorf("%s does not hold commit %s: fetch it there (git fetch origin %s) or give another -source", what, commit, commit)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "archive", "--format=tar", "-o", out, commit)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git archive %s in %s: %v: %s", commit, dir, err, bytes.TrimSpace(msg))
	}
	return &fetched{tarPath: out, provenance: from.recorded + " at " + commit, proven: true}, nil
}

// normalizeTarball rewrites a (gzipped) tarball of upstream as a tar rooted
// at the checkout: a single top-level directory (GitHub's
// "<repo>-<commit>/") is stripped. A git-archive tarball names its commit in
// the pax global header; one naming another commit is refused.
func normalizeTarball(r io.Reader, commit, out string, from origin) (*fetched, error) {
	what := from.what
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		src = zr
	}
	tr := tar.NewReader(src)
	type entry struct {
		h    *tar.Header
		body []byte
	}
	var entries []entry
	named := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			if c := h.PAXRecords["comment"]; c != "" {
				named = c
			}
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		entries = append(entries, entry{h, body})
	}
	if named != "" && named != commit {
		return nil, fmt.Errorf("%s is commit %s (its git-archive header says so), not %s", what, named, commit)
	}
	// Strip one top-level directory when everything is under it.
	prefix := ""
	for i, e := range entries {
		top, _, _ := strings.Cut(strings.TrimPrefix(e.h.Name, "./"), "/")
		if i == 0 {
			prefix = top + "/"
		} else if top+"/" != prefix {
			prefix = ""
			break
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, e := range entries {
		name := strings.TrimPrefix(strings.TrimPrefix(e.h.Name, "./"), prefix)
		if name == "" || name == "/" {
			continue
		}
		h := *e.h
		h.Name = name
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	res := &fetched{tarPath: out, provenance: from.recorded + " (its header names commit " + commit + ")", proven: true}
	if named == "" {
		res.provenance, res.proven = from.recorded+" (it names no commit; the recorded migration digests vouch for it)", false
	}
	return res, nil
}

// extract unpacks a tar into dir: regular files (with their executable
// bit), directories, and symbolic links that stay inside the tree.
func extract(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	return tarball.Extract(f, dir, true)
}
