package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/zonecheck"
)

// Rules only the account can decide, checked with read-only calls in a
// create's preview (an update's preview plans from state and makes no
// call): a custom domain's or route's
// zone exists in the account and holds its hostname, a D1 binding's
// database exists, and a queue consumer's queue exists and is not its own
// dead-letter queue. In a preview a value another resource has yet to
// produce arrives empty and is not checked: that resource makes it exist.
// A deploy checks the zones (an update: the ones it changes) before its
// first mutating call, so an update or `up --skip-preview` refuses before
// the upload, not after it, at the domain;
// a missing database already refuses the upload itself, which creates
// nothing, and costing every create one more read for it would not change
// that. Service targets are not refused: another resource of the same
// program may create them during the up (circular service bindings
// converge in one up); missingServiceTargets warns of those nothing plans.

// accountProblems returns every such problem at once, each naming its
// field; nil when there is none. A failed read is returned as the error.
// What prior (the state an update starts from; nil for a create) already
// had is not read again: an update costs a call only for what it changes.
// Outside a preview only the zones are checked.
func (a WorkerArgs) accountProblems(ctx context.Context, client *cfapi.Client, prior *WorkerArgs, preview bool) ([]string, error) {
	var had WorkerArgs
	if prior != nil {
		had = *prior
	}
	zones := zonecheck.New(client)
	for i, d := range a.Domains {
		if slices.Contains(had.Domains, d) {
			continue
		}
		if err := zones.Check(ctx, fmt.Sprintf("domains[%d]", i), d.Hostname, d.ZoneID, d.ZoneName); err != nil {
			return nil, err
		}
	}
	for i, r := range a.Routes {
		if slices.Contains(had.Routes, r) {
			continue
		}
		if err := zones.Check(ctx, fmt.Sprintf("routes[%d]", i), routeHost(r.Pattern), r.ZoneID, r.ZoneName); err != nil {
			return nil, err
		}
	}
	problems := zones.Problems
	if !preview {
		return problems, nil
	}
	for i, b := range a.D1Databases {
		if b.DatabaseID == "" || slices.ContainsFunc(had.D1Databases, func(o D1Binding) bool { return o.DatabaseID == b.DatabaseID }) {
			continue
		}
		if _, err := client.GetDatabase(ctx, b.DatabaseID); cfapi.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("d1Databases[%d].databaseId: account %s has no D1 database %s: "+
				"bind a D1Database's databaseId output, or fix the ID", i, client.AccountID(), b.DatabaseID))
		} else if err != nil {
			return nil, err
		}
	}
	for i, c := range a.QueueConsumers {
		if c.QueueID == "" || slices.ContainsFunc(had.QueueConsumers, func(o QueueConsumer) bool {
			return o.QueueID == c.QueueID && o.DeadLetterQueue == c.DeadLetterQueue
		}) {
			continue
		}
		q, err := client.GetQueue(ctx, c.QueueID)
		switch {
		case cfapi.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("queueConsumers[%d].queueId: account %s has no queue %s: "+
				"consume a Queue's queueId output, or fix the ID", i, client.AccountID(), c.QueueID))
		case err != nil:
			return nil, err
		case c.DeadLetterQueue != "" && c.DeadLetterQueue == q.Name:
			problems = append(problems, fmt.Sprintf("queueConsumers[%d].deadLetterQueue: %s is the queue this consumer reads: "+
				"name another queue, or leave deadLetterQueue unset", i, q.Name))
		}
	}
	return problems, nil
}

// routeHost is the host part of a route pattern with a leading wildcard
// taken off ("*.example.com/*" and "*example.com/*" are in example.com).
func routeHost(pattern string) string {
	host, _, _ := strings.Cut(pattern, "/")
	host = strings.TrimPrefix(strings.TrimPrefix(host, "*"), ".")
	if strings.Contains(host, "*") {
		return "" // a wildcard inside the host: Cloudflare decides
	}
	return strings.ToLower(host)
}

// missingTailConsumers are warnings, read in a create's preview, for the
// tail consumers' scripts the account does not hold: another resource of
// the program may create them during the up, so they are not refused, only
// said (Cloudflare accepts the setting and the trace events go nowhere).
func (a WorkerArgs) missingTailConsumers(ctx context.Context, client *cfapi.Client) ([]string, error) {
	names := make([]string, len(a.TailConsumers))
	for i, t := range a.TailConsumers {
		names[i] = t.Service
	}
	return missingScripts(ctx, client, names, func(string) bool { return false }, func(i int, name string) string {
		return fmt.Sprintf("tailConsumers[%d].service: account %s has no worker %s yet; unless this program "+
			"creates it, the trace events of %s go nowhere", i, client.AccountID(), name, a.Name)
	})
}

// missingScripts reads, once per name, whether the account holds each
// script names lists (skipping the empty ones and those planned says need
// no read), and returns say's warning, given the name's index, for each it
// lacks.
func missingScripts(ctx context.Context, client *cfapi.Client, names []string, planned func(string) bool,
	say func(i int, name string) string) ([]string, error) {
	var warnings []string
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" || seen[n] || planned(n) {
			continue
		}
		seen[n] = true
		_, found, err := client.GetScript(ctx, n)
		if err != nil {
			return nil, err
		}
		if !found {
			warnings = append(warnings, say(i, n))
		}
	}
	return warnings, nil
}

// plannedTargetGrace is how long a create's preview waits for a service
// target to be checked in this process before reading the account for it:
// the engine checks a program's resources moments apart in a preview.
const plannedTargetGrace = 3 * time.Second

// missingServiceTargets are warnings, read in a create's preview, for the
// service targets that no worker of this run plans (plannedScripts) and
// the account does not hold. Another program or provider may still create
// them, so they are said, not refused: the up waits for them (up to
// Worker.ServiceTargetWait, 3 minutes by default) and then fails naming
// them. Targets this run plans cost no call.
func (a WorkerArgs) missingServiceTargets(ctx context.Context, client *cfapi.Client) ([]string, error) {
	names := make([]string, len(a.Services))
	for i, s := range a.Services {
		names[i] = s.Service
	}
	planned := func(name string) bool { return plannedScripts.await(ctx, name, plannedTargetGrace) }
	return missingScripts(ctx, client, names, planned, func(i int, name string) string {
		return fmt.Sprintf("services[%d].service: account %s has no worker %s and no worker of this "+
			"program is named so; unless something else creates it during the up, the up waits 3 minutes for it and then fails",
			i, client.AccountID(), name)
	})
}

// needsAccount reports whether any value accountProblems checks is known.
func (a WorkerArgs) needsAccount() bool {
	for _, d := range a.Domains {
		if d.ZoneID != "" || d.ZoneName != "" {
			return true
		}
	}
	for _, r := range a.Routes {
		if r.ZoneID != "" || r.ZoneName != "" {
			return true
		}
	}
	for _, b := range a.D1Databases {
		if b.DatabaseID != "" {
			return true
		}
	}
	for _, c := range a.QueueConsumers {
		if c.QueueID != "" {
			return true
		}
	}
	return len(a.TailConsumers) > 0
}

// preflight refuses a deploy whose account problems it finds, all at once.
func (a WorkerArgs) preflight(ctx context.Context, client *cfapi.Client, prior *WorkerArgs, preview bool) error {
	if !a.needsAccount() {
		return nil
	}
	problems, err := a.accountProblems(ctx, client, prior, preview)
	if err != nil {
		return fmt.Errorf("checking worker %s against the account: %w", a.Name, err)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}
