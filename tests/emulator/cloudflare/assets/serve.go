package assets

// Serving a script's static assets at its URL (its own origin, or the
// /__workers/{script}/... alias), in Cloudflare's order: run_worker_first
// routes go to the worker; then
// _redirects; then the asset the path resolves to under html_handling;
// then not_found_handling; and only then the worker (or 404 when the
// script is assets-only). _headers rules are applied to served assets.
//
// Supported here: html_handling auto-trailing-slash (the default),
// force-trailing-slash, drop-trailing-slash and none, resolving /p to /p,
// /p.html or /p/index.html; not_found_handling 404-page (the nearest
// 404.html, status 404), single-page-application (/index.html, 200) and
// none; _redirects lines "from to [status]" with an exact from or a
// trailing * (:splat in to); _headers blocks of a path (exact or trailing
// *) followed by indented "Name: value" lines, "! Name" unsetting.

import (
	"encoding/json"
	"net/http"
	"path"
	"strconv"
	"strings"
)

type assetsConfigSpec struct {
	HTMLHandling     string          `json:"html_handling"`
	NotFoundHandling string          `json:"not_found_handling"`
	RunWorkerFirst   json.RawMessage `json:"run_worker_first"`
	Headers          string          `json:"_headers"`
	Redirects        string          `json:"_redirects"`
}

// Serve answers from a (the assets of a script of account; hasWorker: the
// script has a main module), reporting whether it did; false hands the
// request to the worker. fromBinding is a request through the
// script's assets binding (env.ASSETS.fetch): it is answered from the
// assets whatever run_worker_first says, and false means nothing matched.
// base prefixes redirect locations: "" on the script's own origin, the
// path alias's /__workers/<script> there.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request, account string, a *Assets, hasWorker bool, reqPath string, fromBinding bool, base string) bool {
	if a == nil {
		return false
	}
	var cfg assetsConfigSpec
	_ = json.Unmarshal(a.Config, &cfg)
	hasWorker = hasWorker && !fromBinding
	if hasWorker && runWorkerFirst(cfg.RunWorkerFirst, reqPath) {
		return false
	}
	lookup := func(p string) *assetBlob {
		e, ok := a.Manifest[p]
		if !ok {
			return nil
		}
		return s.st.Blobs[account+"/"+e.Hash]
	}
	s.mu.Lock()
	defer s.mu.Unlock()

	if to, status, ok := matchRedirect(cfg.Redirects, reqPath); ok {
		if strings.HasPrefix(to, "/") {
			to = base + to
		}
		w.Header().Set("Location", to)
		w.WriteHeader(status)
		return true
	}
	if servedPath, redirect := resolveHTML(cfg.HTMLHandling, reqPath, func(p string) bool { return lookup(p) != nil }); redirect != "" {
		w.Header().Set("Location", base+redirect)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	} else if servedPath != "" {
		writeAsset(w, lookup(servedPath), http.StatusOK, cfg.Headers, reqPath)
		return true
	}
	switch cfg.NotFoundHandling {
	case "single-page-application":
		if b := lookup("/index.html"); b != nil {
			writeAsset(w, b, http.StatusOK, cfg.Headers, reqPath)
			return true
		}
	case "404-page":
		for dir := path.Dir(reqPath); ; dir = path.Dir(dir) {
			if b := lookup(path.Join(dir, "404.html")); b != nil {
				writeAsset(w, b, http.StatusNotFound, cfg.Headers, reqPath)
				return true
			}
			if dir == "/" || dir == "." {
				break
			}
		}
	}
	if hasWorker || fromBinding {
		return false
	}
	w.WriteHeader(http.StatusNotFound)
	return true
}

func writeAsset(w http.ResponseWriter, b *assetBlob, status int, headers, reqPath string) {
	if b.ContentType != "" {
		w.Header().Set("Content-Type", b.ContentType)
	}
	applyHeaderRules(w.Header(), headers, reqPath)
	w.WriteHeader(status)
	_, _ = w.Write(b.Content)
}

// runWorkerFirst reads run_worker_first: a bool, or route rules where an
// exclusion (!) wins over an inclusion.
func runWorkerFirst(raw json.RawMessage, p string) bool {
	var all bool
	if json.Unmarshal(raw, &all) == nil {
		return all
	}
	var rules []string
	if json.Unmarshal(raw, &rules) != nil {
		return false
	}
	included := false
	for _, rule := range rules {
		if neg, ok := strings.CutPrefix(rule, "!"); ok {
			if pathMatches(neg, p) {
				return false
			}
		} else if pathMatches(rule, p) {
			included = true
		}
	}
	return included
}

// pathMatches: exact, or a trailing * matching any rest.
func pathMatches(pattern, p string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(p, prefix)
	}
	return pattern == p
}

func matchRedirect(text, p string) (string, int, bool) {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		status := http.StatusFound
		if len(fields) >= 3 {
			if n, err := strconv.Atoi(fields[2]); err == nil {
				status = n
			}
		}
		from, to := fields[0], fields[1]
		if prefix, ok := strings.CutSuffix(from, "*"); ok {
			if rest, ok := strings.CutPrefix(p, prefix); ok {
				return strings.ReplaceAll(to, ":splat", rest), status, true
			}
			continue
		}
		if from == p {
			return to, status, true
		}
	}
	return "", 0, false
}

func applyHeaderRules(h http.Header, text, p string) {
	matched := false
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			matched = pathMatches(strings.TrimSpace(line), p)
			continue
		}
		if !matched {
			continue
		}
		rule := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(rule, "!"); ok {
			h.Del(strings.TrimSpace(name))
			continue
		}
		if name, value, ok := strings.Cut(rule, ":"); ok {
			h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
}

// resolveHTML maps a request path to the asset it serves, or to a
// redirect, under html_handling.
func resolveHTML(mode, p string, exists func(string) bool) (served, redirect string) {
	if mode == "none" {
		if exists(p) {
			return p, ""
		}
		return "", ""
	}
	trimmed := strings.TrimSuffix(p, "/")
	switch {
	case strings.HasSuffix(p, "/index.html") && exists(p) && mode != "none":
		return "", strings.TrimSuffix(p, "index.html")
	case strings.HasSuffix(p, ".html") && exists(p):
		return "", strings.TrimSuffix(p, ".html")
	case exists(p) && !strings.HasSuffix(p, "/"):
		return p, ""
	case strings.HasSuffix(p, "/") && exists(p+"index.html"):
		if mode == "drop-trailing-slash" && p != "/" {
			return "", trimmed
		}
		return p + "index.html", ""
	case !strings.HasSuffix(p, "/") && exists(p+".html"):
		if mode == "force-trailing-slash" {
			return "", p + "/"
		}
		return p + ".html", ""
	case !strings.HasSuffix(p, "/") && exists(p+"/index.html"):
		if mode == "drop-trailing-slash" {
			return p + "/index.html", ""
		}
		return "", p + "/"
	}
	return "", ""
}
