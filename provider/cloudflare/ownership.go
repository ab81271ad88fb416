package cloudflare

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Ownership are the inputs of a resource that records ownership evidence:
// the installation it belongs to and, rarely, a live installation it takes
// objects over from.
type Ownership struct {
	Owner        string `pulumi:"owner,optional"`
	TakeOverFrom string `pulumi:"takeOverFrom,optional"`
}

// Where each kind keeps its evidence (see the package doc):
//   - Worker: a script tag ownerTagPrefix+<identity>, sent with every upload.
//   - D1 database: the one-row table ownerTable inside the database.
//   - KV namespace: the key ownerKVKey, whose value is the identity.
//   - R2 bucket: the object ownerR2Object, whose body is the identity.
//   - Queue: Cloudflare's API keeps nothing on a queue but its name and
//     settings, so its owner is recorded in the account's ownership
//     registry (registry.go) before the queue is created.
//
// The KV key and R2 object live beside upstream's own data, so they must
// not disturb it. At the pinned commit the only KV listing is the Slack
// bot's `SLACK_KV.list({ prefix: "user_repo_branch:<user>:" })`
// (packages/slack-bot/src/branch-preferences.ts), which a key starting with
// "_" never matches; nothing lists the media bucket (the control plane only
// puts, gets, heads and deletes keys it made, storage/object-storage.ts).
const (
	ownerTagPrefix = "openinspect-owner-"
	ownerTable     = "_openinspect_owner"
	ownerKVKey     = "_openinspect_owner"
	ownerR2Object  = ".openinspect-owner"
)

// kvEvidence reads a namespace's owner key; empty reports a namespace
// without a single key.
func kvEvidence(ctx context.Context, client *cfapi.Client, namespaceID string) (owner string, empty bool, err error) {
	value, ok, err := client.GetValue(ctx, namespaceID, ownerKVKey)
	if err != nil {
		return "", false, fmt.Errorf("reading the ownership evidence of KV namespace %s: %w", namespaceID, err)
	}
	if ok {
		return strings.TrimSpace(string(value)), false, nil
	}
	keys, err := client.ListKeys(ctx, namespaceID, 10)
	if err != nil {
		return "", false, fmt.Errorf("reading the ownership evidence of KV namespace %s: %w", namespaceID, err)
	}
	return "", len(keys) == 0, nil
}

// markKV records owner in the namespace, replacing an earlier owner.
func markKV(ctx context.Context, client *cfapi.Client, namespaceID, owner string) error {
	if owner == "" {
		return nil
	}
	if err := client.PutValue(ctx, namespaceID, ownerKVKey, []byte(owner)); err != nil {
		return fmt.Errorf("recording installation %s in KV namespace %s: %w", owner, namespaceID, err)
	}
	return nil
}

// r2Evidence reads a bucket's owner object. The v4 API cannot list objects,
// so it never reports a bucket empty: an unmarked bucket needs adoptExisting.
func r2Evidence(ctx context.Context, client *cfapi.Client, bucket string) (owner string, empty bool, err error) {
	body, ok, err := client.GetObject(ctx, bucket, ownerR2Object)
	if err != nil {
		return "", false, fmt.Errorf("reading the ownership evidence of R2 bucket %q: %w", bucket, err)
	}
	if !ok {
		return "", false, nil
	}
	return strings.TrimSpace(string(body)), false, nil
}

// markR2 records owner in the bucket, replacing an earlier owner.
func markR2(ctx context.Context, client *cfapi.Client, bucket, owner string) error {
	if owner == "" {
		return nil
	}
	if err := client.PutObject(ctx, bucket, ownerR2Object, "text/plain", []byte(owner)); err != nil {
		return fmt.Errorf("recording installation %s in R2 bucket %q: %w", owner, bucket, err)
	}
	return nil
}

// ownerTags are the script tags recording owner ("" records nothing).
func ownerTags(owner string) []string {
	if owner == "" {
		return nil
	}
	return []string{ownerTagPrefix + owner}
}

// ownerFromTags is the owner a script's tags record, or "".
func ownerFromTags(tags []string) string {
	for _, t := range tags {
		if o, ok := strings.CutPrefix(t, ownerTagPrefix); ok {
			return o
		}
	}
	return ""
}

// d1Evidence reads a database's owner row; empty reports a database without
// a single table of its own, which holds nothing anyone could lose.
func d1Evidence(ctx context.Context, client *cfapi.Client, databaseID string) (owner string, empty bool, err error) {
	res, err := client.Query(ctx, databaseID, `SELECT name FROM sqlite_master WHERE type = 'table' `+
		`AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE '\_cf\_%' ESCAPE '\'`)
	if err != nil {
		return "", false, fmt.Errorf("reading the ownership evidence of D1 database %s: %w", databaseID, err)
	}
	var tables []string
	for _, r := range res {
		for _, row := range r.Rows {
			if name, ok := row["name"].(string); ok {
				tables = append(tables, name)
			}
		}
	}
	if !slices.Contains(tables, ownerTable) {
		return "", len(tables) == 0, nil
	}
	res, err = client.Query(ctx, databaseID, "SELECT installation FROM "+ownerTable+" LIMIT 1")
	if err != nil {
		return "", false, fmt.Errorf("reading the ownership evidence of D1 database %s: %w", databaseID, err)
	}
	for _, r := range res {
		for _, row := range r.Rows {
			owner, _ = row["installation"].(string)
		}
	}
	return owner, false, nil
}

// markD1 records owner in the database, replacing an earlier owner (a
// take-over) in one unit.
func markD1(ctx context.Context, client *cfapi.Client, databaseID, owner string) error {
	if owner == "" {
		return nil
	}
	_, err := client.Query(ctx, databaseID,
		"CREATE TABLE IF NOT EXISTS "+ownerTable+" (installation TEXT NOT NULL, recorded_at TEXT NOT NULL);"+
			"DELETE FROM "+ownerTable+";"+
			"INSERT INTO "+ownerTable+" (installation, recorded_at) VALUES (?, ?);",
		owner, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("recording installation %s in D1 database %s: %w", owner, databaseID, err)
	}
	return nil
}

// claim is how every named Cloudflare object comes under this stack's
// management. A found object is judged by its ownership evidence:
//   - it records this installation: adopted — a create this installation
//     started but never recorded (a crashed or killed run) is finished;
//   - it records another installation: refused, naming it, even with
//     adoptExisting, unless takeOverFrom names that installation;
//   - it records nothing: adopted with adoptExisting, or when it is empty
//     and the kind can tell (nothing of anyone's can be captured); refused
//     otherwise, since this stack's destroy would delete it.
//
// An object not found is created; for a kind whose evidence lives in the
// account's ownership registry (reserve), only after the name is recorded
// for this installation there, and refused when another holds it.
type claim[T any] struct {
	kind      string // human name, e.g. "D1 database"
	name      string
	adopt     bool
	accountID string
	ownership Ownership
	find      func(context.Context) (T, bool, error)
	create    func(context.Context) (T, error)
	id        func(T) string
	// evidence reads the owner an object records ("" for none) and whether
	// it is empty; nil for kinds that carry no evidence.
	evidence func(context.Context, T) (owner string, empty bool, err error)
	// mark records the owner on an object just created or taken over; nil
	// when the create itself records it (a Worker's upload).
	mark func(context.Context, T) error
	// reserve records the owner before an object is created, for kinds
	// whose evidence lives outside the object (the account's ownership
	// registry), and returns the installation holding the name afterwards;
	// one other than this installation refuses the create. It replaces mark
	// after a create. nil for kinds that carry their own evidence.
	reserve func(context.Context) (holder string, err error)
	// taken, for kinds without reserve whose create refuses a name in use,
	// reports that refusal. The create is then tried first and the account
	// searched only when the name is taken, so a create costs no listing
	// of the account (whose size is every other installation's). Same
	// outcome as finding first: a free name is created and recorded, a
	// taken one goes through the found object's evidence.
	taken func(error) bool
}

// adoptHint is what to do about an unowned object in the way: the inputs
// that really work, for a component child and for a standalone resource.
const adoptHint = "set adoptExisting: true on the OpenInspect component (or on this resource, when it is declared on its own) " +
	"to take it over, or delete it"

// run returns the object and whether it was adopted rather than created.
func (c claim[T]) run(ctx context.Context) (T, bool, error) {
	var zero T
	if c.taken != nil && c.reserve == nil {
		created, err := c.create(ctx)
		if err == nil {
			return created, false, c.record(ctx, created)
		}
		if !c.taken(err) {
			return zero, false, err
		}
	}
	existing, found, err := c.find(ctx)
	if err != nil {
		return zero, false, err
	}
	mine := c.ownership.Owner
	if !found {
		if c.reserve != nil {
			holder, err := c.reserve(ctx)
			if err != nil {
				return zero, false, err
			}
			if holder != mine {
				return zero, false, c.foreign(fmt.Sprintf("%s %q does not exist in account %s yet, but the account's ownership "+
					"registry (D1 database %q) records that it", c.kind, c.name, c.accountID, registryDatabase), holder)
			}
		}
		created, err := c.create(ctx)
		if err != nil {
			return zero, false, err
		}
		if c.reserve != nil {
			return created, false, nil
		}
		return created, false, c.record(ctx, created)
	}
	return c.decide(ctx, existing)
}

// decide is what run does with an object found under the name: its
// evidence says whether this installation adopts it, takes it over, or is
// refused.
func (c claim[T]) decide(ctx context.Context, existing T) (T, bool, error) {
	var zero T
	mine := c.ownership.Owner
	where := fmt.Sprintf("%s %q already exists in account %s (id %s)", c.kind, c.name, c.accountID, c.id(existing))
	var owner string
	var err error
	var empty bool
	if c.evidence != nil {
		if owner, empty, err = c.evidence(ctx, existing); err != nil {
			return zero, false, err
		}
	}
	switch {
	case owner != "" && owner == mine:
		p.GetLogger(ctx).Infof("%s and records this installation (%s): adopting it, a create an interrupted run never recorded", where, mine)
		return existing, true, nil
	case owner != "" && owner == c.ownership.TakeOverFrom:
		p.GetLogger(ctx).Warningf("%s and belongs to installation %s: taking it over as takeOverFrom asks. "+
			"That installation's destroy can still delete it; remove it from that stack first (pulumi state delete there)", where, owner)
		return existing, true, c.record(ctx, existing)
	case owner != "":
		return zero, false, c.foreign(where+" and", owner)
	case c.adopt:
		return existing, true, c.record(ctx, existing)
	case empty && mine != "":
		p.GetLogger(ctx).Infof("%s, empty and unclaimed: claiming it for installation %s", where, mine)
		return existing, true, c.record(ctx, existing)
	}
	return zero, false, fmt.Errorf("%s, records no installation and is not managed by this stack; %s", where, adoptHint)
}

// foreign refuses an object another installation owns; subject ends where
// "belongs to installation ..." continues it.
func (c claim[T]) foreign(subject, owner string) error {
	return fmt.Errorf("%s belongs to installation %s, not this one (%s); adoptExisting never takes over "+
		"another installation's objects, since either stack's destroy would delete them. Pick another deploymentName "+
		"or namePrefix, or, to move the object into this installation, set takeOverFrom: %s on the OpenInspect component",
		subject, owner, family.DisplayOwner(c.ownership.Owner), owner)
}

func (c claim[T]) record(ctx context.Context, obj T) error {
	if c.mark == nil {
		return nil
	}
	return c.mark(ctx, obj)
}

// accountClient returns the Cloudflare client for a resource recorded in
// account recorded ("" when not yet known, as in an import). It refuses a
// provider configured for another account: with a changed account ID, reads
// and deletes would otherwise address the wrong tenant's objects.
func accountClient(ctx context.Context, recorded string) (*cfapi.Client, error) {
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return nil, err
	}
	if recorded != "" && recorded != client.AccountID() {
		return nil, fmt.Errorf("resource lives in Cloudflare account %s but the provider is configured for account %s; "+
			"restore openinspect:cloudflareAccountId to manage it", recorded, client.AccountID())
	}
	return client, nil
}
