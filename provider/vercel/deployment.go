package vercel

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
)

// VercelDeployment is a production deployment of a project from a source
// tree on disk: the files Vercel lacks are uploaded by SHA-1, Vercel builds
// with the project's settings and variables, and the deployment is waited
// for until it is ready and holds the project's production alias. A digest
// over the source, the project and its variables gates it: unchanged, no
// call is made.
type VercelDeployment struct {
	// PollInterval is how often a building deployment is read (zero:
	// defaultPoll); tests shorten it.
	PollInterval time.Duration
	// Timeout bounds the wait for a build (zero: defaultTimeout).
	Timeout time.Duration
}

// VercelDeploymentToken is the resource's type token.
const VercelDeploymentToken = "openinspect:index:VercelDeployment"

const (
	defaultPoll    = 2 * time.Second
	defaultTimeout = 45 * time.Minute
	// aliasWait bounds the wait for a ready production deployment to take
	// the project's aliases (Vercel assigns them just after READY).
	aliasWait = 2 * time.Minute
)

// DefaultPaths are what upstream's web build needs of a checkout: the web
// package, the shared package its install command builds, and the root
// manifest and lock the install runs from.
var DefaultPaths = []string{"package.json", "package-lock.json", "packages/shared", "packages/web"}

// VercelDeploymentArgs are the inputs.
type VercelDeploymentArgs struct {
	TeamID      string   `pulumi:"teamId,optional"`
	APIURL      string   `pulumi:"apiUrl,optional"`
	Token       string   `pulumi:"token" provider:"secret"`
	ProjectID   string   `pulumi:"projectId"`
	ProjectName string   `pulumi:"projectName"`
	Source      string   `pulumi:"source"`
	Paths       []string `pulumi:"paths,optional"`
	// VariablesDigest is the project's: a moved one deploys again (Vercel
	// builds with the variables as they are when it builds).
	VariablesDigest string `pulumi:"variablesDigest,optional"`
	// Domain, when set, is the production URL's host.
	Domain string `pulumi:"domain,optional"`
}

// VercelDeploymentState is what the provider records.
type VercelDeploymentState struct {
	VercelDeploymentArgs
	DeploymentID  string `pulumi:"deploymentId"`
	URL           string `pulumi:"url"`
	ProductionURL string `pulumi:"productionUrl"`
	SourceDigest  string `pulumi:"sourceDigest"`
	Digest        string `pulumi:"digest"`
	Files         int    `pulumi:"files"`
	Uploaded      int    `pulumi:"uploaded"`
}

var (
	_ infer.CustomCheck[VercelDeploymentArgs]                         = (*VercelDeployment)(nil)
	_ infer.CustomDiff[VercelDeploymentArgs, VercelDeploymentState]   = (*VercelDeployment)(nil)
	_ infer.CustomUpdate[VercelDeploymentArgs, VercelDeploymentState] = (*VercelDeployment)(nil)
	_ infer.CustomRead[VercelDeploymentArgs, VercelDeploymentState]   = (*VercelDeployment)(nil)
	_ infer.CustomDelete[VercelDeploymentState]                       = (*VercelDeployment)(nil)
)

// Annotate documents the resource.
func (r *VercelDeployment) Annotate(a infer.Annotator) {
	a.Describe(r, "A production deployment of a Vercel project built by Vercel from a source tree on disk (by default "+
		"upstream's web: "+strings.Join(DefaultPaths, ", ")+"; node_modules and build outputs are never sent). The files "+
		"are offered by SHA-1 and only those Vercel lacks are uploaded (the files API); the build log is reported as "+
		"progress, a failed build fails with Vercel's message (the previous deployment keeps serving and the next up "+
		"deploys again), and a ready deployment is waited for until it holds the project's production alias. A digest "+
		"over the source, the project and its variables decides whether anything is deployed: unchanged, no call is made. "+
		"Delete makes no call: a deployment goes with its project.")
}

// Annotate documents the inputs.
func (a *VercelDeploymentArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.TeamID, "The team the project belongs to.")
	an.Describe(&a.APIURL, "Vercel's REST API (default https://api.vercel.com).")
	an.Describe(&a.Token, "A Vercel access token with access to the team.")
	an.Describe(&a.ProjectID, "The project deployed (a VercelProject's projectId).")
	an.Describe(&a.ProjectName, "The project's name, the deployment's name.")
	an.Describe(&a.Source, "The directory the uploaded paths are relative to (an upstream checkout).")
	an.Describe(&a.Paths, "Files and directories under source to upload (default "+strings.Join(DefaultPaths, ", ")+").")
	an.Describe(&a.VariablesDigest, "The project's variablesDigest: when it moves, a new deployment is made.")
	an.Describe(&a.Domain, "A domain of the project: the production URL is https://<domain>.")
}

// Annotate documents the outputs.
func (s *VercelDeploymentState) Annotate(a infer.Annotator) {
	a.Describe(&s.DeploymentID, "The deployment's ID (dpl_...).")
	a.Describe(&s.URL, "The deployment's own URL.")
	a.Describe(&s.ProductionURL, "The project's production URL: https://<domain> with a domain, else the production alias "+
		"Vercel gave the deployment.")
	a.Describe(&s.SourceDigest, "A digest of the uploaded files (paths and SHA-1s).")
	a.Describe(&s.Digest, "A digest of the source, the project and its variables: what decides a new deployment.")
	a.Describe(&s.Files, "How many files the deployment holds.")
	a.Describe(&s.Uploaded, "How many of them the last deployment had to upload.")
}

func (a *VercelDeploymentArgs) paths() []string {
	if len(a.Paths) == 0 {
		return DefaultPaths
	}
	return a.Paths
}

// Check validates the inputs; the source is read at preview, so a missing
// directory is refused before any call.
func (*VercelDeployment) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[VercelDeploymentArgs], error) {
	args, failures, err := infer.DefaultCheck[VercelDeploymentArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[VercelDeploymentArgs]{Inputs: args, Failures: failures}, err
	}
	add := func(prop, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: prop, Reason: fmt.Sprintf(format, a...)})
	}
	if problem := TeamIDProblem(args.TeamID); problem != "" {
		add("teamId", "%s", problem)
	}
	if args.APIURL != "" {
		if err := vercelapi.CheckAPIURL(args.APIURL); err != nil {
			add("apiUrl", "%v", err)
		}
	}
	for i, rel := range args.Paths {
		if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			add(fmt.Sprintf("paths[%d]", i), "%q is not a relative slash-separated path inside source", rel)
		}
	}
	if !family.IsUnknown(req.NewInputs, "source") {
		if info, err := os.Stat(args.Source); err != nil || !info.IsDir() {
			add("source", "%q is not a directory", args.Source)
		}
	}
	return infer.CheckResponse[VercelDeploymentArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// sourceFile is one file to deploy.
type sourceFile struct {
	rel, abs, sha string
	size          int64
}

// SourceFiles lists the files under paths of source that a deployment
// uploads (relative slash paths, sorted, each once): regular files only,
// left out what the Vercel CLI leaves out (its defaults, local environment
// files among them, and the source's .vercelignore) and the web's other
// build outputs. The release step carries the same files in the embedded
// set.
func SourceFiles(source string, paths []string) ([]string, error) {
	filter, err := newUploadFilter(source)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rel := range paths {
		root := filepath.Join(source, filepath.FromSlash(rel))
		info, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("vercel: the source has no %s: %w", rel, err)
		}
		if !info.IsDir() {
			if !filter.excludes(rel, false) {
				out = append(out, rel)
			}
			continue
		}
		err = filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, err := filepath.Rel(source, abs)
			if err != nil {
				return err
			}
			r = filepath.ToSlash(r)
			if filter.excludes(r, d.IsDir()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			// Symlinks and devices are not part of a source tree Vercel takes.
			if d.Type().IsRegular() {
				out = append(out, r)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("vercel: reading the source: %w", err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// readSource lists the files to deploy, each with its SHA-1, in path
// order, and their digest.
func readSource(a VercelDeploymentArgs) ([]sourceFile, string, error) {
	rels, err := SourceFiles(a.Source, a.paths())
	if err != nil {
		return nil, "", err
	}
	files := make([]sourceFile, 0, len(rels))
	for _, rel := range rels {
		f, err := hashFile(filepath.Join(a.Source, filepath.FromSlash(rel)), rel)
		if err != nil {
			return nil, "", err
		}
		files = append(files, f)
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s\x00%s\n", f.rel, f.sha)
	}
	return files, family.SHA256HexString(b.String()), nil
}

func hashFile(abs, rel string) (sourceFile, error) {
	raw, err := os.ReadFile(abs)
	if err != nil {
		return sourceFile{}, fmt.Errorf("vercel: %w", err)
	}
	sum := sha1.Sum(raw)
	return sourceFile{rel: rel, abs: abs, sha: hex.EncodeToString(sum[:]), size: int64(len(raw))}, nil
}

// digest is what decides a new deployment: the source, the project, its
// variables and the domain.
func digest(a VercelDeploymentArgs, source string) string {
	return family.SHA256HexString(strings.Join([]string{source, a.ProjectID, a.VariablesDigest, a.Domain}, "\x00"))
}

// Diff deploys again when the digest moves; a new token, API URL or team
// is recorded without a deployment.
func (*VercelDeployment) Diff(_ context.Context, req infer.DiffRequest[VercelDeploymentArgs, VercelDeploymentState]) (infer.DiffResponse, error) {
	o, n := req.State.VercelDeploymentArgs, req.Inputs
	d := map[string]p.PropertyDiff{}
	set := func(key string, changed bool) {
		if changed {
			d[key] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	set("token", o.Token != n.Token)
	set("apiUrl", o.APIURL != n.APIURL)
	set("teamId", o.TeamID != n.TeamID)
	set("projectId", o.ProjectID != n.ProjectID)
	set("projectName", o.ProjectName != n.ProjectName)
	set("source", o.Source != n.Source)
	set("paths", !slices.Equal(o.paths(), n.paths()))
	set("variablesDigest", o.VariablesDigest != n.VariablesDigest)
	set("domain", o.Domain != n.Domain)
	if req.State.Digest == "" {
		d["digest"] = p.PropertyDiff{Kind: p.Update} // the last deployment failed: deploy again
	}
	if _, src, err := readSource(n); err == nil && src != req.State.SourceDigest {
		d["sourceDigest"] = p.PropertyDiff{Kind: p.Update}
	} else if err != nil {
		return infer.DiffResponse{}, err
	}
	return infer.DiffResponse{HasChanges: len(d) > 0, DetailedDiff: d}, nil
}

// Create deploys.
func (r *VercelDeployment) Create(ctx context.Context, req infer.CreateRequest[VercelDeploymentArgs]) (infer.CreateResponse[VercelDeploymentState], error) {
	state := VercelDeploymentState{VercelDeploymentArgs: req.Inputs}
	if req.DryRun {
		p.GetLogger(ctx).Infof("vercel project %s: a production deployment is made from %s", req.Inputs.ProjectName, req.Inputs.Source)
		return infer.CreateResponse[VercelDeploymentState]{Output: state}, nil
	}
	if err := r.deploy(ctx, &state); err != nil {
		if state.DeploymentID == "" {
			return infer.CreateResponse[VercelDeploymentState]{}, err
		}
		// A failed build is recorded without a digest, so the next up
		// deploys again.
		state.Digest = ""
		return infer.CreateResponse[VercelDeploymentState]{ID: state.DeploymentID, Output: state}, initFailed(err)
	}
	return infer.CreateResponse[VercelDeploymentState]{ID: state.DeploymentID, Output: state}, nil
}

// Update deploys again when the digest moved, and otherwise only records
// the new inputs.
func (r *VercelDeployment) Update(ctx context.Context, req infer.UpdateRequest[VercelDeploymentArgs, VercelDeploymentState]) (infer.UpdateResponse[VercelDeploymentState], error) {
	state := req.State
	state.VercelDeploymentArgs = req.Inputs
	files, src, err := readSource(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[VercelDeploymentState]{}, err
	}
	if digest(req.Inputs, src) == req.State.Digest {
		return infer.UpdateResponse[VercelDeploymentState]{Output: state}, nil
	}
	if req.DryRun {
		var why []string
		if src != req.State.SourceDigest {
			why = append(why, "source")
		}
		if req.Inputs.VariablesDigest != req.State.VariablesDigest {
			why = append(why, "variables")
		}
		if req.Inputs.ProjectID != req.State.ProjectID || req.Inputs.Domain != req.State.Domain {
			why = append(why, "project")
		}
		p.GetLogger(ctx).Infof("vercel project %s: a new production deployment because of the %s (%d files, those Vercel lacks uploaded)",
			req.Inputs.ProjectName, strings.Join(why, " and "), len(files))
		return infer.UpdateResponse[VercelDeploymentState]{Output: state}, nil
	}
	if err := r.deploy(ctx, &state); err != nil {
		failed := req.State
		if state.DeploymentID != req.State.DeploymentID {
			failed.Digest = "" // the next up deploys again
		}
		return infer.UpdateResponse[VercelDeploymentState]{Output: failed}, err
	}
	return infer.UpdateResponse[VercelDeploymentState]{Output: state}, nil
}

// markerKey is the meta key every deployment the provider makes carries,
// its value the digest (source, project, variables, domain) it deploys:
// what lets a later run find the deployment a killed one started.
const markerKey = "openinspectDigest"

// deploy makes a production deployment: it offers every file, uploads the
// ones Vercel says it lacks, creates the deployment again, then waits for
// the build, streaming its log, and for the production alias. A deployment
// of this very digest that an earlier, interrupted run started is awaited
// and recorded instead of deploying again.
func (r *VercelDeployment) deploy(ctx context.Context, state *VercelDeploymentState) error {
	in := state.VercelDeploymentArgs
	files, src, err := readSource(in)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("vercel: no files to deploy under %s (%s)", in.Source, strings.Join(in.paths(), ", "))
	}
	cl, err := vercelapi.New(in.APIURL, in.Token, in.TeamID)
	if err != nil {
		return err
	}
	log := p.GetLogger(ctx)
	marker := digest(in, src)
	state.SourceDigest, state.Files = src, len(files)
	dep, err := startedEarlier(ctx, cl, in, marker)
	if err != nil {
		return err
	}
	if dep != nil {
		log.Infof("vercel %s: deployment %s of this source and these variables, started by an earlier run that was "+
			"interrupted, is %s: awaited, not deployed again", in.ProjectName, dep.ID, strings.ToLower(dep.ReadyState))
		state.Uploaded = 0
	} else {
		if dep, state.Uploaded, err = r.create(ctx, cl, in, marker, files); err != nil {
			return err
		}
	}
	state.DeploymentID, state.URL = dep.ID, r.urlOf(in, dep.URL)
	dep, err = r.wait(ctx, cl, in.ProjectName, dep)
	if err != nil {
		return err
	}
	state.ProductionURL = r.productionURL(in, dep)
	state.Digest = marker
	return nil
}

// create offers the files, uploads those Vercel lacks and creates the
// deployment, marked with the digest; it says how many files it uploaded.
func (r *VercelDeployment) create(ctx context.Context, cl *vercelapi.Client, in VercelDeploymentArgs, marker string,
	files []sourceFile) (*vercelapi.Deployment, int, error) {
	log := p.GetLogger(ctx)
	list := make([]vercelapi.DeploymentFile, len(files))
	bySHA := map[string]sourceFile{}
	for i, f := range files {
		list[i] = vercelapi.DeploymentFile{File: f.rel, SHA: f.sha, Size: f.size}
		bySHA[f.sha] = f
	}
	meta := map[string]string{markerKey: marker}
	uploaded := 0
	// Twice at most: once to learn what is missing, once after uploading
	// it (a file another deployment uploads meanwhile is not asked again).
	for attempt := 0; ; attempt++ {
		dep, err := cl.CreateDeployment(ctx, in.ProjectName, in.ProjectID, meta, list)
		var missing *vercelapi.MissingFilesError
		if !errors.As(err, &missing) || attempt == 2 {
			if err != nil {
				return nil, uploaded, fmt.Errorf("vercel: creating the deployment of %s: %w", in.ProjectName, err)
			}
			return dep, uploaded, nil
		}
		log.InfoStatusf("vercel %s: uploading %d of %d files Vercel lacks", in.ProjectName, len(missing.SHAs), len(files))
		for _, sha := range missing.SHAs {
			f, ok := bySHA[sha]
			if !ok {
				return nil, uploaded, fmt.Errorf("vercel: the API asked for a file %s this deployment does not hold", sha)
			}
			raw, err := os.ReadFile(f.abs)
			if err != nil {
				return nil, uploaded, fmt.Errorf("vercel: %w", err)
			}
			if err := cl.UploadFile(ctx, sha, raw); err != nil {
				return nil, uploaded, fmt.Errorf("vercel: uploading %s: %w", f.rel, err)
			}
			uploaded++
		}
	}
}

// startedEarlier finds the production deployment of marker's digest an
// earlier run started and never recorded (killed while it built, or once
// it was ready): the project's newest one so marked, if it is still under
// way, or ready and still the project's newest ready production
// deployment (so it holds the production alias). One that failed, was
// cancelled, or has been superseded since is not taken: nil, and a new
// deployment is made.
func startedEarlier(ctx context.Context, cl *vercelapi.Client, in VercelDeploymentArgs, marker string) (*vercelapi.Deployment, error) {
	marked, err := cl.Deployments(ctx, vercelapi.DeploymentQuery{ProjectID: in.ProjectID, Target: "production",
		Meta: map[string]string{markerKey: marker}, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("vercel: looking for a deployment of %s an earlier run started: %w", in.ProjectName, err)
	}
	if len(marked) == 0 {
		return nil, nil
	}
	found := marked[0]
	switch found.Status() {
	case "QUEUED", "INITIALIZING", "BUILDING":
	case "READY":
		newest, err := cl.Deployments(ctx, vercelapi.DeploymentQuery{ProjectID: in.ProjectID, Target: "production",
			States: []string{"READY"}, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("vercel: reading %s's production deployment: %w", in.ProjectName, err)
		}
		if len(newest) == 0 || newest[0].UID != found.UID {
			return nil, nil
		}
	default:
		return nil, nil
	}
	dep, err := cl.GetDeployment(ctx, found.UID)
	if errors.Is(err, vercelapi.ErrNotFound) {
		return nil, nil // deleted since it was listed
	}
	if err != nil {
		return nil, fmt.Errorf("vercel: reading deployment %s: %w", found.UID, err)
	}
	return dep, nil
}

// wait polls the deployment until it is ready and aliased, reporting each
// new build log line as progress; a failed build is an error carrying
// Vercel's message.
func (r *VercelDeployment) wait(ctx context.Context, cl *vercelapi.Client, name string, dep *vercelapi.Deployment) (*vercelapi.Deployment, error) {
	poll, timeout := r.PollInterval, r.Timeout
	if poll <= 0 {
		poll = defaultPoll
	}
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := p.GetLogger(ctx)
	seen := 0
	var readyAt time.Time
	for {
		if events, err := cl.Events(ctx, dep.ID); err == nil {
			for _, e := range events[min(seen, len(events)):] {
				log.InfoStatusf("vercel %s: %s", name, strings.TrimRight(e.Text, "\n"))
			}
			seen = max(seen, len(events))
		}
		switch dep.ReadyState {
		case "READY":
			if dep.AliasAssigned || len(dep.Alias) > 0 {
				return dep, nil
			}
			if readyAt.IsZero() {
				readyAt = time.Now()
			} else if time.Since(readyAt) > aliasWait {
				return nil, fmt.Errorf("vercel: deployment %s of %s is ready but was given no production alias within %s", dep.ID, name, aliasWait)
			}
		case "ERROR", "CANCELED":
			msg := dep.ErrorMessage
			if msg == "" {
				msg = "the build " + strings.ToLower(dep.ReadyState)
			}
			return nil, fmt.Errorf("vercel: deployment %s of %s failed: %s", dep.ID, name, msg)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("vercel: waiting for deployment %s of %s (%s): %w", dep.ID, name, dep.ReadyState, ctx.Err())
		case <-time.After(poll):
		}
		next, err := cl.GetDeployment(ctx, dep.ID)
		if err != nil {
			return nil, fmt.Errorf("vercel: reading deployment %s: %w", dep.ID, err)
		}
		dep = next
	}
}

// urlOf is a Vercel host as a URL: https, except through an http API (a
// local emulator on loopback), whose hosts answer plain http.
func (r *VercelDeployment) urlOf(in VercelDeploymentArgs, host string) string {
	if host == "" {
		return ""
	}
	scheme := "https"
	if u, err := url.Parse(in.APIURL); err == nil && u.Scheme == "http" {
		scheme = "http"
	}
	return scheme + "://" + host
}

// productionURL is https://<domain> when the project has one, else the
// first production alias.
func (r *VercelDeployment) productionURL(in VercelDeploymentArgs, dep *vercelapi.Deployment) string {
	if in.Domain != "" {
		return "https://" + in.Domain
	}
	if len(dep.Alias) > 0 {
		return r.urlOf(in, dep.Alias[0])
	}
	return r.urlOf(in, dep.URL)
}

// Read refreshes the deployment: one gone (its project deleted outside)
// is dropped, so the next up deploys again.
func (r *VercelDeployment) Read(ctx context.Context, req infer.ReadRequest[VercelDeploymentArgs, VercelDeploymentState]) (infer.ReadResponse[VercelDeploymentArgs, VercelDeploymentState], error) {
	type resp = infer.ReadResponse[VercelDeploymentArgs, VercelDeploymentState]
	cl, err := vercelapi.New(req.State.APIURL, req.State.Token, req.State.TeamID)
	if err != nil {
		return resp{}, err
	}
	dep, err := cl.GetDeployment(ctx, req.ID)
	if errors.Is(err, vercelapi.ErrNotFound) {
		return resp{}, nil
	}
	if err != nil {
		return resp{}, err
	}
	state := req.State
	state.URL = r.urlOf(state.VercelDeploymentArgs, dep.URL)
	if dep.ReadyState != "READY" {
		state.Digest = "" // not serving: the next up deploys again
	}
	return resp{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete makes no call: the deployment goes with its project, and deleting
// the production deployment alone would leave the project serving nothing.
func (*VercelDeployment) Delete(context.Context, infer.DeleteRequest[VercelDeploymentState]) (infer.DeleteResponse, error) {
	return infer.DeleteResponse{}, nil
}
