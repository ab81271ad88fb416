package cloudflare

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// The account's ownership registry is where objects that cannot carry
// ownership evidence themselves record the installation that owns them.
// Today that is queues: Cloudflare's API keeps nothing on a queue but its
// name and settings.
//
// Place: one D1 database per account, registryDatabase, holding the table
//
//	objects (kind, name, owner, created_at, PRIMARY KEY (kind, name))
//
// D1 rather than a KV namespace because D1 is one SQLite primary: the
// primary key lets exactly one of two concurrent installations win a name,
// where KV writes are last-writer-wins and its reads eventually consistent.
// Its calls go through D1's /raw endpoint (cfapi.QueryRaw), one statement
// each, so they never mix with an installation's own database traffic.
//
// The protocol, for a kind whose resource has an owner:
//   - create, the object not found: record (kind, name, owner) BEFORE the
//     create: INSERT ... ON CONFLICT (kind, name) DO UPDATE ... WHERE the
//     recorded owner is this installation or the one takeOverFrom names,
//     RETURNING the owner. No row back means another installation holds the
//     name (creating it now, or killed before its create): refused naming
//     it. A crash between the record and the create leaves this
//     installation's record, which the next run finds and goes on from.
//   - create, the object found: its record decides, as claim describes for
//     evidence on the object (this installation's: adopted, finishing a
//     create a killed run never recorded; another's: refused unless
//     takeOverFrom names it; none: adoptExisting, then recorded).
//   - delete: the record is read first; an object recorded for another
//     installation (taken over from this one) is left in place and only
//     dropped from this stack. Otherwise it is deleted and then its record
//     removed (a crash between the two leaves a record of this
//     installation, which its next destroy or create handles).
//
// The registry itself is created by whichever installation needs it first
// (a record to write and none found). D1 names are unique per account: a
// concurrent creator's create fails with code 7502 and it reads the list
// again, so both use the one database. Its table is created IF NOT EXISTS
// by the creator and again by anyone who meets "no such table" (a creator
// killed between the two). No Pulumi resource represents the registry, so no
// destroy deletes it; D1Database refuses its name (D1NameProblem).
//
// A queue create does not list the account's queues (Cloudflare lists them
// only whole, so that would cost what every other installation made) once
// the account has a registry: it reads the name's record, records it, then
// creates; only a failed create, or a record of another installation, lists
// the queues to say what is in the way (createQueue in queue.go).
//
// Cost in Cloudflare calls, beside the object's own calls: finding the
// registry is one D1 list by name (filtered, so constant in the account's
// size); each read or write is one /raw query. A queue create: +3 (the
// registry found, the name's record read, the name recorded), the same in
// an account of any size; the account's first: the queue list, the
// registry's create and its table instead. Adopting a recorded queue: +1
// (the queue list after the create fails); delete: +3 (registry found,
// read, record removed), +1 (the list) when the account has no registry. Nothing is cached between calls: each resource
// operation finds the registry again, so one deleted out of band is never
// addressed by a stale ID.
const (
	registryDatabase = "openinspect-registry"
	registryQueue    = "queue" // the kind column of a queue's record

	registryTableDDL = "CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, name TEXT NOT NULL, " +
		"owner TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (kind, name))"

	d1NameTaken = 7502 // D1: "A database with that name already exists"
)

// registry is the account's ownership registry as one resource operation
// sees it: found (or created) at most once per operation.
type registry struct {
	client *cfapi.Client
	id     string // "" until found or created
	// absent: looked up and not there, so the next find in this operation
	// is not another list call (a queue create looks before it records).
	absent bool
}

func newRegistry(client *cfapi.Client) *registry { return &registry{client: client} }

func (r *registry) where() string {
	return fmt.Sprintf("the ownership registry of account %s (D1 database %q)", r.client.AccountID(), registryDatabase)
}

// find looks the registry up without creating it; false when the account
// has none yet.
func (r *registry) find(ctx context.Context) (bool, error) {
	if r.id != "" || r.absent {
		return r.id != "", nil
	}
	db, ok, err := r.client.FindDatabase(ctx, registryDatabase)
	if err != nil {
		return false, fmt.Errorf("finding %s: %w", r.where(), err)
	}
	r.id, r.absent = db.ID, !ok
	return ok, nil
}

// ensure finds the registry or creates it, with its table.
func (r *registry) ensure(ctx context.Context) error {
	if ok, err := r.find(ctx); err != nil || ok {
		return err
	}
	db, err := r.client.CreateDatabase(ctx, registryDatabase, "")
	switch {
	case cfapi.HasCode(err, d1NameTaken):
		// Another installation created it since the lookup: use that one.
		// Its table may not exist yet; a query meeting "no such table"
		// creates it.
		r.absent = false
		ok, err := r.find(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("creating %s: D1 says the name is taken, yet no database of that name is listed", r.where())
		}
		return nil
	case err != nil:
		return fmt.Errorf("creating %s: %w", r.where(), err)
	}
	r.id = db.ID
	return r.createTable(ctx)
}

func (r *registry) createTable(ctx context.Context) error {
	if _, err := r.client.QueryRaw(ctx, r.id, registryTableDDL); err != nil {
		return fmt.Errorf("creating the table of %s: %w", r.where(), err)
	}
	return nil
}

// isNoSuchTable reports a query on a registry whose table was never created.
func isNoSuchTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// owner is the installation recorded for (kind, name), "" for none (also
// when the account has no registry). It never creates anything.
func (r *registry) owner(ctx context.Context, kind, name string) (string, error) {
	if ok, err := r.find(ctx); err != nil || !ok {
		return "", err
	}
	res, err := r.client.QueryRaw(ctx, r.id, "SELECT owner FROM objects WHERE kind = ?1 AND name = ?2", kind, name)
	if isNoSuchTable(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the owner of %s %q from %s: %w", kind, name, r.where(), err)
	}
	return firstOwner(res), nil
}

// record makes owner the recorded owner of (kind, name) unless the name is
// recorded for an installation other than owner and those in replacing
// (takeOverFrom, a previous identity of the same stack). It returns who
// holds the name afterwards: owner, or the installation that kept it. The
// primary key makes concurrent records of one name serial: exactly one
// owner wins.
func (r *registry) record(ctx context.Context, kind, name, owner string, replacing ...string) (string, error) {
	if err := r.ensure(ctx); err != nil {
		return "", err
	}
	params := []string{kind, name, owner, time.Now().UTC().Format(time.RFC3339)}
	holders := []string{"?3"}
	for _, o := range replacing {
		if o != "" && o != owner {
			params = append(params, o)
			holders = append(holders, fmt.Sprintf("?%d", len(params)))
		}
	}
	sql := "INSERT INTO objects (kind, name, owner, created_at) VALUES (?1, ?2, ?3, ?4) " +
		"ON CONFLICT (kind, name) DO UPDATE SET owner = excluded.owner " +
		"WHERE objects.owner IN (" + strings.Join(holders, ", ") + ") RETURNING owner"
	res, err := r.client.QueryRaw(ctx, r.id, sql, params...)
	if isNoSuchTable(err) {
		if err = r.createTable(ctx); err == nil {
			res, err = r.client.QueryRaw(ctx, r.id, sql, params...)
		}
	}
	if err != nil {
		return "", fmt.Errorf("recording installation %s for %s %q in %s: %w", owner, kind, name, r.where(), err)
	}
	if got := firstOwner(res); got != "" {
		return got, nil
	}
	// No row back: the conflict kept another installation's record.
	return r.owner(ctx, kind, name)
}

// forget removes owner's record of (kind, name); another's is kept.
func (r *registry) forget(ctx context.Context, kind, name, owner string) error {
	if ok, err := r.find(ctx); err != nil || !ok {
		return err
	}
	_, err := r.client.QueryRaw(ctx, r.id, "DELETE FROM objects WHERE kind = ?1 AND name = ?2 AND owner = ?3", kind, name, owner)
	if err != nil && !isNoSuchTable(err) {
		return fmt.Errorf("removing the record of %s %q from %s: %w", kind, name, r.where(), err)
	}
	return nil
}

func firstOwner(res []cfapi.StatementResult) string {
	for _, r := range res {
		for _, row := range r.Rows {
			if o, ok := row["owner"].(string); ok {
				return o
			}
		}
	}
	return ""
}
