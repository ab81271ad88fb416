package pinsync

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// The fixture pins (tests/fixtures/pins, written here in upstream's layout):
// B differs from A by a Durable Object class removed with deleted_classes, a
// worker and a binding added, a binding renamed, a cron added, a var
// removed, a generated secret added and two migrations appended.
const fixtures = "../../../../tests/fixtures/pins"

// upstreamRepo is a git repository holding the fixture trees as commits: A,
// then B, then a commit without upstream's Terraform.
type upstreamRepo struct {
	dir               string
	a, b, noTerraform string
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.test", "GIT_AUTHOR_DATE=2026-08-01T12:00:00Z",
		"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.test", "GIT_COMMITTER_DATE=2026-08-01T12:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// copyTree replaces dir's files (all but .git) with src's.
func copyTree(t *testing.T, src, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func newUpstreamRepo(t *testing.T) *upstreamRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is required: the sync reads upstream from a git checkout")
	}
	r := &upstreamRepo{dir: t.TempDir()}
	git(t, r.dir, "init", "--quiet", "--initial-branch=main")
	commit := func(tree, msg string) string {
		copyTree(t, filepath.Join(fixtures, tree), r.dir)
		git(t, r.dir, "add", "--all")
		git(t, r.dir, "commit", "--quiet", "-m", msg)
		return git(t, r.dir, "rev-parse", "HEAD")
	}
	r.a = commit("a", "fixture pin A")
	r.b = commit("b", "fixture pin B")
	if err := os.RemoveAll(filepath.Join(r.dir, "terraform")); err != nil {
		t.Fatal(err)
	}
	git(t, r.dir, "add", "--all")
	git(t, r.dir, "commit", "--quiet", "-m", "no Terraform")
	r.noTerraform = git(t, r.dir, "rev-parse", "HEAD")
	return r
}

// pinFiles is a contract and UPSTREAM_COMMIT in a temporary directory,
// starting as the committed ones.
type pinFiles struct{ contract, pin string }

func newPinFiles(t *testing.T) pinFiles {
	t.Helper()
	dir := t.TempDir()
	p := pinFiles{contract: filepath.Join(dir, "contract.json"), pin: filepath.Join(dir, "UPSTREAM_COMMIT")}
	if err := os.WriteFile(p.contract, upstream.Raw(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.pin, []byte(upstream.UpstreamCommit()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p pinFiles) sync(t *testing.T, source, commit, decisions string, check bool) (*Result, error) {
	t.Helper()
	return Run(context.Background(), Options{Source: source, Commit: commit, ContractFile: p.contract, PinFile: p.pin,
		DecisionsFile: filepath.Join(fixtures, decisions), Check: check})
}

func (p pinFiles) read(t *testing.T) (*upstream.Contract, string) {
	t.Helper()
	raw, err := os.ReadFile(p.contract)
	if err != nil {
		t.Fatal(err)
	}
	c, err := upstream.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := os.ReadFile(p.pin)
	if err != nil {
		t.Fatal(err)
	}
	return c, strings.TrimSpace(string(pin))
}

// TestSyncFixturePinsAToB derives fixture A's contract (from the committed
// one) and then B's from A's, and checks that the change report A -> B
// names each change B makes, that both contracts are written with their
// commit and validate, and that a second sync at B reproduces B's contract
// byte for byte.
func TestSyncFixturePinsAToB(t *testing.T) {
	repo := newUpstreamRepo(t)
	files := newPinFiles(t)

	resA, err := files.sync(t, repo.dir, repo.a, "decisions-a.json", false)
	if err != nil {
		t.Fatalf("sync to A: %v", err)
	}
	a, pinA := files.read(t)
	if pinA != repo.a || a.Upstream.Commit != repo.a || a.Upstream.CommitDate != "2026-08-01T12:00:00+00:00" {
		t.Fatalf("A written as commit %s (pin file %s, date %s), want %s", a.Upstream.Commit, pinA, a.Upstream.CommitDate, repo.a)
	}
	if err := a.ValidateFor(repo.a); err != nil {
		t.Fatalf("A's contract: %v", err)
	}
	cp := a.Worker("control-plane")
	if cp == nil || len(cp.DurableObjectClasses) != 2 || len(cp.Crons) != 1 || a.Worker("notifier") != nil || a.D1Migrations.FileCount != 2 {
		t.Fatalf("A's contract does not hold fixture A's facts: control plane %+v, migrations %d", cp, a.D1Migrations.FileCount)
	}
	if !resA.Report.Has("workers", "removed", "github-bot") || !resA.Report.Has("worker control-plane vars", "removed", "ALLOWED_EMAILS") {
		t.Errorf("the report from the pin to A does not name what A lacks:\n%s", resA.Report)
	}

	resB, err := files.sync(t, repo.dir, repo.b, "decisions-b.json", false)
	if err != nil {
		t.Fatalf("sync A -> B: %v", err)
	}
	report := resB.Report
	t.Logf("change report A -> B:\n%s", report)
	for _, want := range []struct{ section, kind, name string }{
		{"worker control-plane Durable Object classes", "removed", "SchedulerDO"},
		{"worker control-plane bindings", "removed", "durableObject SCHEDULER"},
		{"workers", "added", "notifier"},
		{"worker notifier bindings", "added", "service CONTROL_PLANE"},
		{"worker control-plane bindings", "added", "service NOTIFIER"},
		{"worker control-plane bindings", "renamed", "namespace session-index"},
		{"worker control-plane crons", "added", "23 * * * *"},
		{"worker slack-bot vars", "removed", "DEFAULT_MODEL"},
		{"generated secrets", "added", "random_password.service_auth_secret_notifier (serviceAuthSecretNotifier)"},
		{"worker control-plane secrets", "added", "SERVICE_AUTH_SECRET_NOTIFIER"},
		{"migrations", "added", "0003_add_session_status.sql"},
		{"migrations", "added", "0004_create_notifications.sql"},
	} {
		if !report.Has(want.section, want.kind, want.name) {
			t.Errorf("the report A -> B does not say %s %q in %q", want.kind, want.name, want.section)
		}
	}
	if !strings.Contains(report.String(), "> kv REPOS_CACHE renamed SESSION_INDEX") {
		t.Errorf("the rename is not printed as one:\n%s", report)
	}
	if !strings.Contains(report.String(), "deletes Durable Object class(es) SchedulerDO with deleted_classes") {
		t.Errorf("the report does not say B deletes SchedulerDO with deleted_classes:\n%s", report)
	}
	for _, unchanged := range []string{"worker slack-bot crons", "queues", "KV namespaces", "R2 buckets", "toolchain pins"} {
		for _, c := range report.Changes {
			if c.Section == unchanged {
				t.Errorf("the report names a change B does not make: %s %s", c.Section, c)
			}
		}
	}

	b, pinB := files.read(t)
	if pinB != repo.b || b.Upstream.Commit != repo.b {
		t.Fatalf("B written as commit %s (pin file %s), want %s", b.Upstream.Commit, pinB, repo.b)
	}
	if err := b.ValidateFor(repo.b); err != nil {
		t.Fatalf("B's contract: %v", err)
	}
	cp = b.Worker("control-plane")
	if len(cp.DurableObjectClasses) != 1 || cp.DurableObjectClasses[0].ClassName != "SessionDO" {
		t.Errorf("B's control plane classes = %+v, want SessionDO alone", cp.DurableObjectClasses)
	}
	if g := b.GeneratedSecret("serviceAuthSecretNotifier"); g == nil || g.Length != 64 || g.Alphabet != upstream.AlphabetAlphanumeric {
		t.Errorf("B's generated notifier secret = %+v", g)
	}
	if b.D1Migrations.FileCount != 4 || b.D1Migrations.Last != 4 || len(b.Artefacts.Migrations) != 4 {
		t.Errorf("B's migrations: %d files, last %d, %d digests; want 4", b.D1Migrations.FileCount, b.D1Migrations.Last, len(b.Artefacts.Migrations))
	}
	if a.Artefacts.Migrations["0001_create_sessions.sql"] != b.Artefacts.Migrations["0001_create_sessions.sql"] {
		t.Error("a migration both pins share has two digests")
	}

	again, err := files.sync(t, repo.dir, repo.b, "decisions-b.json", true)
	if err != nil {
		t.Fatalf("sync at B again: %v", err)
	}
	if again.Changed || len(again.Report.Changes) != 0 {
		t.Errorf("a second sync at B is not a no-op: changed %t\n%s", again.Changed, again.Report)
	}
}

// TestSyncRefusesUndecidedFacts: B's new cron, generated secret and worker
// bundle are facts the tree cannot settle; without B's decisions the sync
// names each with what to write, and writes nothing.
func TestSyncRefusesUndecidedFacts(t *testing.T) {
	repo := newUpstreamRepo(t)
	files := newPinFiles(t)
	if _, err := files.sync(t, repo.dir, repo.a, "decisions-a.json", false); err != nil {
		t.Fatalf("sync to A: %v", err)
	}
	before, err := os.ReadFile(files.contract)
	if err != nil {
		t.Fatal(err)
	}
	_, err = files.sync(t, repo.dir, repo.b, "decisions-a.json", false)
	var undecided *UndecidedError
	if !errors.As(err, &undecided) {
		t.Fatalf("sync to B without B's decisions = %v, want an UndecidedError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`cron "23 * * * *" of worker control-plane is new`, `"crons": {"control-plane": {"23 * * * *": `,
		"generated secret random_password.service_auth_secret_notifier", `"generated": {"random_password.service_auth_secret_notifier": {"name": `,
		"worker notifier is new and has no reference bundle digest", `"bundles": {"notifier": `,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if len(undecided.Facts) != 3 {
		t.Errorf("%d undecided facts, want 3 (cron, generated secret, bundle):\n%s", len(undecided.Facts), msg)
	}
	after, _ := os.ReadFile(files.contract)
	if string(after) != string(before) {
		t.Error("the contract was written although facts were undecided")
	}
	if _, pin := files.read(t); pin != repo.a {
		t.Errorf("UPSTREAM_COMMIT moved to %s although facts were undecided", pin)
	}
}

// TestSyncRefusesBadPins: a commit the checkout lacks, a tree without
// upstream's Terraform and a source that is no git checkout are each a
// clear error, and nothing is written.
func TestSyncRefusesBadPins(t *testing.T) {
	repo := newUpstreamRepo(t)
	files := newPinFiles(t)
	missing := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, source, commit string
		is                   error
		want                 []string
	}{
		{"missing commit", repo.dir, missing, ErrNoCommit, []string{"has no commit " + missing, "git -C " + repo.dir + " fetch origin " + missing}},
		{"no terraform", repo.dir, repo.noTerraform, ErrNotUpstream, []string{repo.noTerraform, "has no terraform/environments/production/*.tf"}},
		{"not git", t.TempDir(), repo.a, nil, []string{"is not a git checkout of upstream"}},
		{"no commit given", repo.dir, "", nil, []string{"COMMIT is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := files.sync(t, tc.source, tc.commit, "decisions-a.json", false)
			if err == nil {
				t.Fatal("the sync accepted a bad pin")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			if raw, _ := os.ReadFile(files.contract); string(raw) != string(upstream.Raw()) {
				t.Error("the contract was written")
			}
		})
	}
}

// TestConstantsAndEnvFields: the readers of the builders' pins and the
// workers' Env types take the forms upstream writes them in.
func TestConstantsAndEnvFields(t *testing.T) {
	got := constants("# c\nA_VERSION = \"1.2.3\"\nconst B_VERSION = \"4.5\";\nARG C_VERSION=6.7\nD = f(x)\nlower = \"x\"\nA_VERSION = \"9\"\n")
	want := map[string]string{"A_VERSION": "1.2.3", "B_VERSION": "4.5", "C_VERSION": "6.7"}
	if len(got) != len(want) {
		t.Errorf("constants = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("constants[%s] = %q, want %q", k, got[k], v)
		}
	}
	fields := interfaceFields("export interface Env {\n  // a comment: not a field\n  DB: D1Database; // the database\n  OPT?: string;\n  nested: { INNER: string };\n}\nexport interface Other { X: string }\n", "Env")
	if len(fields) != 3 || fields["DB"] || !fields["OPT"] || fields["nested"] {
		t.Errorf("interfaceFields = %v, want DB (required), OPT (optional), nested (required)", fields)
	}
	if _, inner := fields["INNER"]; inner {
		t.Error("a nested member was read as a field")
	}
	trigger, pragma := sqlFeatures("-- PRAGMA in a comment\nCREATE  TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END;\n")
	if !trigger || pragma {
		t.Errorf("sqlFeatures = trigger %t, pragma %t; want a trigger and no pragma", trigger, pragma)
	}
}

// TestSyncAsksForNewInputsAndConditions: a tree that puts the new worker
// behind a new variable needs two decisions, asked one after the other: the
// variable's input name, then the named condition (printed with its
// derived test). With both, the worker carries the condition, whose
// default is computed from the input's.
func TestSyncAsksForNewInputsAndConditions(t *testing.T) {
	repo := newUpstreamRepo(t)
	copyTree(t, filepath.Join(fixtures, "b"), repo.dir)
	edit := func(rel, old, new string) {
		t.Helper()
		p := filepath.Join(repo.dir, rel)
		raw, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(raw), old) {
			t.Fatalf("%s has no %q (%v)", rel, old, err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const prod = "terraform/environments/production/"
	edit(prod+"variables.tf", `variable "enable_slack_bot" {`, "variable \"enable_notifier\" {\n  type    = bool\n  default = true\n}\n\nvariable \"enable_slack_bot\" {")
	edit(prod+"workers-notifier.tf", "module \"notifier_worker\" {\n", "module \"notifier_worker\" {\n  count  = var.enable_notifier ? 1 : 0\n")
	edit(prod+"workers-notifier.tf", "resource \"null_resource\" \"notifier_build\" {\n", "resource \"null_resource\" \"notifier_build\" {\n  count = var.enable_notifier ? 1 : 0\n")
	edit(prod+"workers-control-plane.tf", "    [\n      { binding_name = \"NOTIFIER\"", "    var.enable_notifier ? [\n      { binding_name = \"NOTIFIER\"")
	edit(prod+"workers-control-plane.tf", "notifier-${local.name_suffix}\" },\n    ],", "notifier-${local.name_suffix}\" },\n    ] : [],")
	git(t, repo.dir, "add", "--all")
	git(t, repo.dir, "commit", "--quiet", "-m", "B with an optional notifier")
	commit := git(t, repo.dir, "rev-parse", "HEAD")

	files := newPinFiles(t)
	if _, err := files.sync(t, repo.dir, repo.a, "decisions-a.json", false); err != nil {
		t.Fatalf("sync to A: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(fixtures, "decisions-b.json"))
	if err != nil {
		t.Fatal(err)
	}
	decide := func(extra string) string {
		t.Helper()
		doc := strings.TrimSuffix(strings.TrimSpace(string(raw)), "}") + "," + extra + "}"
		p := filepath.Join(t.TempDir(), "decisions.json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sync := func(decisions string) error {
		_, err := Run(context.Background(), Options{Source: repo.dir, Commit: commit, ContractFile: files.contract, PinFile: files.pin, DecisionsFile: decisions})
		return err
	}

	err = sync(filepath.Join(fixtures, "decisions-b.json"))
	if err == nil || !strings.Contains(err.Error(), `"inputs": {"enable_notifier": {"name": `) {
		t.Fatalf("first refusal = %v, want the variable enable_notifier to be decided", err)
	}
	withInput := decide(`"inputs": {"enable_notifier": {"name": "enableNotifier", "description": "Deploy the fixture's notifier."}}`)
	err = sync(withInput)
	wantTest := `{"op":"isTrue","input":"enableNotifier"}`
	if err == nil || !strings.Contains(err.Error(), `"conditions": {"<name>": {"description": "<when it holds>", "test": `+wantTest+`}}`) {
		t.Fatalf("second refusal = %v, want the condition %s to be decided", err, wantTest)
	}
	withBoth := decide(`"inputs": {"enable_notifier": {"name": "enableNotifier", "description": "Deploy the fixture's notifier."}},
		"conditions": {"notifier": {"description": "The fixture's notifier is enabled.", "test": ` + wantTest + `}}`)
	if err := sync(withBoth); err != nil {
		t.Fatalf("sync with both decided: %v", err)
	}
	c, _ := files.read(t)
	if w := c.Worker("notifier"); w == nil || w.When != "notifier" {
		t.Fatalf("notifier worker = %+v, want it under the condition notifier", w)
	}
	if cond := c.Conditions["notifier"]; cond.Default == nil || !*cond.Default {
		t.Errorf("condition notifier's default = %v, want true (enableNotifier defaults to true)", cond.Default)
	}
	if in := c.Input("enableNotifier"); in == nil || in.Type != "bool" || in.Default != true || in.UpstreamVariable != "enable_notifier" {
		t.Errorf("input enableNotifier = %+v", in)
	}
	cp := c.Worker("control-plane")
	if b := find(cp.Bindings.Services, func(s upstream.ServiceBinding) bool { return s.Binding == "NOTIFIER" }); b == nil || b.When != "notifier" {
		t.Errorf("the control plane's NOTIFIER binding = %+v, want it under the condition notifier", b)
	}
}

// TestEnvTypeNotices: a binding the worker's Env type does not declare, and
// a required Env field nothing binds, are told to the reviewer; an optional
// field left unbound is not.
func TestEnvTypeNotices(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "packages", "w", "src", "types")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "index.ts"), []byte("export interface Env {\n  A: string;\n  B?: string;\n  C: string;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &deriver{tree: &tree{root: root}}
	d.checkEnvType(upstream.Worker{Logical: "w", Package: "packages/w", Vars: []upstream.EnvEntry{{Name: "A"}, {Name: "D"}}})
	want := []string{
		"worker w binds D, which its Env type (packages/w/src/types/index.ts) does not declare",
		"worker w: its Env type (packages/w/src/types/index.ts) requires C, which nothing binds",
	}
	if strings.Join(d.notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices:\n%s\nwant:\n%s", strings.Join(d.notices, "\n"), strings.Join(want, "\n"))
	}
}

// The change report has words for every kind of binding the contract has.
func TestReportNamesEveryBindingKind(t *testing.T) {
	for _, kind := range upstream.BindingKinds() {
		if _, ok := reportedKinds[kind]; !ok {
			t.Errorf("the report has no words for binding kind %s", kind)
		}
	}
}
