package workers

// A deployment split over two versions ("gradual deployment"): both run in
// workerd, each as its own service, and each request a script serves (on
// workers.dev, a route or a custom domain) goes to one of them:
//
//   - the version Cloudflare-Workers-Version-Overrides names for the script
//     (`<script>="<version id>"`, a structured-header dictionary), when it is
//     one of the deployment's;
//   - else, with Cloudflare-Workers-Version-Key, the same version for the
//     same key (version affinity), chosen by the key's hash against the
//     shares;
//   - else a version drawn at random by the shares.
//
// Documented (Cloudflare's gradual deployments guide): the percentages, the
// two headers and what they do. Assumed: how a key maps onto the shares
// (any fixed mapping gives the documented affinity). Not split (the
// emulator's simplification): queue batches, crons and other scripts'
// service bindings reach the live version, the one with the larger share;
// the other version's Durable Object bindings reach the live version's
// classes, as both versions share the script's namespaces.

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

// Headers of Cloudflare's gradual deployments.
const (
	versionOverridesHeader = "Cloudflare-Workers-Version-Overrides"
	versionKeyHeader       = "Cloudflare-Workers-Version-Key"
)

// versionService is the workerd service running a script's version other
// than the live one.
func versionService(acct, name, versionID string) string {
	return workerService(acct, name) + "@" + versionID
}

// splitVersion is the current deployment's other version and its share,
// when the deployment is split and both versions have code to run.
func (ws *workerScript) splitVersion() (*workerVersion, float64) {
	if len(ws.Deployments) == 0 || len(ws.Modules) == 0 {
		return nil, 0
	}
	d := ws.Deployments[len(ws.Deployments)-1]
	live := d.live()
	for _, sh := range d.Versions {
		if sh.VersionID == live || sh.Percentage <= 0 {
			continue
		}
		if v := ws.version(sh.VersionID); v != nil && len(v.Content.Modules) > 0 {
			return v, sh.Percentage
		}
	}
	return nil, 0
}

// servedVersion is the workerd service and the content that serve r: the
// live version's unless the deployment is split and r goes to the other.
func (ws *workerScript) servedVersion(r *http.Request) (string, *workerContent) {
	liveService := workerService(ws.AccountID, ws.Name)
	other, share := ws.splitVersion()
	if other == nil {
		return liveService, &ws.workerContent
	}
	otherService := versionService(ws.AccountID, ws.Name, other.ID)
	if id, ok := versionOverride(r.Header.Get(versionOverridesHeader), ws.Name); ok {
		switch id {
		case other.ID:
			return otherService, &other.Content
		case ws.liveVersionID():
			return liveService, &ws.workerContent
		}
	}
	point := rand.Float64() * 100
	if key := r.Header.Get(versionKeyHeader); key != "" {
		sum := sha256.Sum256([]byte(key))
		point = float64(binary.BigEndian.Uint64(sum[:8])%10000) / 100
	}
	if point < share {
		return otherService, &other.Content
	}
	return liveService, &ws.workerContent
}

// versionOverride reads the version a Cloudflare-Workers-Version-Overrides
// dictionary names for script.
func versionOverride(header, script string) (string, bool) {
	for _, member := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(member), "=")
		if ok && strings.TrimSpace(key) == script {
			return strings.Trim(strings.TrimSpace(value), `"`), true
		}
	}
	return "", false
}

// versionWorkerConfigLocked is the workerd service of a split deployment's
// other version: its own modules and bindings, without Durable Object
// classes of its own (its bindings to the script's classes reach the live
// version's service, which declares them).
func (s *Service) versionWorkerConfigLocked(ws *workerScript, v *workerVersion, services *runtimeServices) (workerd.Worker, error) {
	w, err := s.workerConfigLocked(ws.AccountID, ws.Name, &v.Content, v, services, false)
	if err != nil {
		return w, err
	}
	w.Service = versionService(ws.AccountID, ws.Name, v.ID)
	w.DurableObjectClasses = nil
	for i, b := range w.Bindings {
		if b.DurableObjectClass == "" || b.DurableObjectService != "" {
			continue
		}
		if slices.Contains(ws.Classes, b.DurableObjectClass) {
			w.Bindings[i].DurableObjectService = workerService(ws.AccountID, ws.Name)
			continue
		}
		w.Bindings[i].DurableObjectClass = ""
		w.Bindings[i].Service = services.stub(http.StatusServiceUnavailable,
			"the Durable Object binding "+b.Name+" names class "+b.DurableObjectClass+", which the deployed version of script "+ws.Name+" does not declare")
	}
	return w, nil
}
