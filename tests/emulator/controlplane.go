package emulator

// A stand-in for a deployed Open-Inspect control-plane worker.
//
// Every uploaded script is reachable at /__workers/{script_name}/..., the
// script's own path being everything after the name. A script is served as a
// control plane when it has at least one secret_text binding named
// SERVICE_AUTH_SECRET_*; anything else answers 404 with a plain JSON error.
//
// Only the slice of the control plane the provider uses is emulated: GET
// /health and the global secrets API (PUT /secrets, GET /secrets, DELETE
// /secrets/{key}), each answering as upstream does (ColeMurray/
// background-agents at ecc3d7b8; facts from packages/control-plane/src/
// router.ts, routes/secrets.ts, db/secrets-validation.ts, db/scoped-secrets.ts,
// auth/authenticate.ts, auth/service/request-authenticator.ts and
// packages/shared/src/service-auth.ts). Every other path answers upstream's
// 404 {"error":"Not found"}.
//
// Request pipeline, in upstream's order:
//
//  1. no binding named DB: 503 {"error":"Database not configured"} (before
//     anything else, even /health, and without the CORS/trace headers);
//  2. OPTIONS: 200, empty, CORS preflight headers;
//  3. no route for method+path: 404 {"error":"Not found"};
//  4. /secrets routes: sig1 service authentication (below);
//  5. SCM_PROVIDER: a value other than github/bitbucket/gitlab (trimmed,
//     lower-cased; empty means github) is 500 on every route; the secrets
//     routes are GitHub-only, so bitbucket or gitlab answers 501;
//  6. the handler.
//
// sig1 authentication of /secrets (X-OpenInspect-Service-Signature present;
// absent is 401 {"error":"Unauthorized"}):
//
//   - X-OpenInspect-Service not one of web, slack-bot, github-bot,
//     linear-bot: 401 Unauthorized;
//   - the service's key SERVICE_AUTH_SECRET_<SERVICE> not bound: 500
//     {"error":"Service authentication not configured"};
//   - header not exactly sig1.<1-16 ASCII digits, > 0>.<1-64 lower-case
//     hex>.<64 lower-case hex>, or the timestamp more than 5 minutes (300000
//     ms, exclusive) from now either way: 401 Unauthorized;
//   - body over 16 MiB: 413 {"error":"Request body too large"};
//   - HMAC-SHA256 (key: the secret's UTF-8 bytes) over
//     "sig1\n<service>\n<timestamp as a decimal number>\n<nonce>\n<METHOD>\n
//     <pathname>\n<canonical query>\n<sha256 hex of the body>\n<actor>"
//     not equal: 401 Unauthorized. pathname is the path as the worker sees it
//     (percent-encoded as received, not decoded, no query); canonical query
//     is the query parsed as application/x-www-form-urlencoded, pairs sorted
//     bytewise by key NUL value, each part re-encoded like JavaScript's
//     encodeURIComponent, joined by '&';
//   - a reused nonce is accepted: upstream only logs it;
//   - X-OpenInspect-Actor, when non-empty, must be "<ns>:<id>" with ns the
//     service's own namespace (slack-bot: slack, github-bot: github,
//     linear-bot: linear; web: none): otherwise 401 Unauthorized;
//   - web additionally needs a browser session, which cannot exist here:
//     401 Unauthorized.
//
// Secret values live in emulator state (AppSecrets), never over HTTP. In
// upstream they live, encrypted, in the D1 database bound as DB; here the
// store belongs to the script and is deleted with it.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// workersPrefix is where uploaded scripts are served.
const workersPrefix = "/__workers/"

// Upstream's limits.
const (
	cpSignatureValidity = 5 * time.Minute
	cpMaxSignedBody     = 16 << 20 // SERVICE_REQUEST_MAX_BODY_BYTES
	cpMaxKeyLength      = 256      // UTF-16 code units, like JavaScript's length
	cpMaxValueBytes     = 16384
	cpMaxTotalBytes     = 65536
	cpMaxSecrets        = 50
	cpServiceKeyPrefix  = "SERVICE_AUTH_SECRET_"
)

// cpServiceKeys maps each service upstream knows to the binding holding its
// verification key.
var cpServiceKeys = map[string]string{
	"web":        "SERVICE_AUTH_SECRET_WEB",
	"slack-bot":  "SERVICE_AUTH_SECRET_SLACK_BOT",
	"github-bot": "SERVICE_AUTH_SECRET_GITHUB_BOT",
	"linear-bot": "SERVICE_AUTH_SECRET_LINEAR_BOT",
}

// cpActorNamespace is the one actor namespace each service may assert.
var cpActorNamespace = map[string]string{"slack-bot": "slack", "github-bot": "github", "linear-bot": "linear"}

var (
	cpTimestampRE = regexp.MustCompile(`^[0-9]{1,16}$`)
	cpNonceRE     = regexp.MustCompile(`^[0-9a-f]{1,64}$`)
	cpMACRE       = regexp.MustCompile(`^[0-9a-f]{64}$`)
	cpKeyRE       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// cpReservedKeys are names the sandbox environment sets itself.
var cpReservedKeys = map[string]bool{
	"PYTHONUNBUFFERED": true, "SANDBOX_ID": true, "CONTROL_PLANE_URL": true, "SANDBOX_AUTH_TOKEN": true,
	"REPO_OWNER": true, "REPO_NAME": true, "GITHUB_APP_TOKEN": true, "SESSION_CONFIG": true,
	"RESTORED_FROM_SNAPSHOT": true, "OPENCODE_CONFIG_CONTENT": true, "PATH": true, "HOME": true,
	"USER": true, "SHELL": true, "TERM": true, "PWD": true, "LANG": true,
}

// appSecret is one entry of a control plane's global secrets store.
type appSecret struct {
	Value     string `json:"value"`
	CreatedAt int64  `json:"created_at"` // unix milliseconds
	UpdatedAt int64  `json:"updated_at"`
}

// cpRoute is one emulated control-plane route.
type cpRoute struct {
	method     string
	pattern    string // as in Counts keys, after /__workers/{script_name}
	re         *regexp.Regexp
	public     bool // no authentication (upstream "public")
	githubOnly bool // upstream supportedScmProviders: ["github"]
	handle     func(s *Server, w http.ResponseWriter, c *cpCall)
}

var cpRoutes = []cpRoute{
	{method: http.MethodGet, pattern: "/health", re: regexp.MustCompile(`^/health$`), public: true, handle: (*Server).cpHealth},
	{method: http.MethodPut, pattern: "/secrets", re: regexp.MustCompile(`^/secrets$`), githubOnly: true, handle: (*Server).cpPutSecrets},
	{method: http.MethodGet, pattern: "/secrets", re: regexp.MustCompile(`^/secrets$`), githubOnly: true, handle: (*Server).cpListSecrets},
	{method: http.MethodDelete, pattern: "/secrets/{key}", re: regexp.MustCompile(`^/secrets/([^/]+)$`), githubOnly: true, handle: (*Server).cpDeleteSecret},
}

// cpOtherPattern is the Counts pattern of control-plane paths no route serves.
const cpOtherPattern = "/{path...}"

func (s *Server) registerControlPlane() {
	s.mux.HandleFunc(workersPrefix+"{script_name}", s.cpServe)
	s.mux.HandleFunc(workersPrefix+"{script_name}/{path...}", s.cpServe)
}

// WorkerURL is where a script's own HTTP is served: URL()+"/__workers/"+script.
func (s *Server) WorkerURL(script string) string { return s.url + workersPrefix + script }

// cpScript is what a request needs of the script serving it, copied under mu.
type cpScript struct {
	account, name string
	texts         map[string]string // plain_text and secret_text bindings
	bound         map[string]bool   // every binding name whose env value is truthy
}

// envText is a text binding's value, "" when unbound (falsy either way).
func (c *cpScript) envText(name string) string { return c.texts[name] }

func scriptEnv(ws *workerScript) *cpScript {
	c := &cpScript{account: ws.AccountID, name: ws.Name, texts: map[string]string{}, bound: map[string]bool{}}
	for _, raw := range ws.Bindings {
		var b bindingSpec
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case "plain_text", "secret_text":
			if b.Text != nil {
				c.texts[b.Name] = *b.Text
				c.bound[b.Name] = *b.Text != ""
			}
		default:
			c.bound[b.Name] = true
		}
	}
	return c
}

// isControlPlane: at least one SERVICE_AUTH_SECRET_* secret_text binding.
func isControlPlane(ws *workerScript) bool {
	for _, raw := range ws.Bindings {
		var b bindingSpec
		if json.Unmarshal(raw, &b) == nil && b.Type == "secret_text" &&
			strings.HasPrefix(b.Name, cpServiceKeyPrefix) && len(b.Name) > len(cpServiceKeyPrefix) {
			return true
		}
	}
	return false
}

// cpLookupLocked resolves a script name across accounts.
func (s *Server) cpLookupLocked(name string) (*workerScript, int, error) {
	var found []*workerScript
	for _, key := range core.SortedKeys(s.st.Workers) {
		if ws := s.st.Workers[key]; ws.Name == name {
			found = append(found, ws)
		}
	}
	switch {
	case len(found) == 0:
		return nil, http.StatusNotFound, fmt.Errorf("no worker script named %q", name)
	case len(found) > 1:
		accts := make([]string, len(found))
		for i, ws := range found {
			accts[i] = ws.AccountID
		}
		return nil, http.StatusConflict, fmt.Errorf("worker script %q exists in more than one account (%s); /__workers/ cannot tell them apart",
			name, strings.Join(accts, ", "))
	case !isControlPlane(found[0]):
		return nil, http.StatusNotFound, fmt.Errorf("worker script %q serves no emulated HTTP: it has no secret_text binding named %s*", name, cpServiceKeyPrefix)
	}
	return found[0], 0, nil
}

// cpCall is one request to a control plane on its way through the pipeline.
type cpCall struct {
	r         *http.Request
	script    *cpScript
	method    string
	path      string // pathname as the worker sees it
	match     []string
	body      []byte
	requestID string
	traceID   string
}

func (s *Server) cpServe(w http.ResponseWriter, r *http.Request) {
	method := fetchMethod(r.Method)
	path := cpPathname(cpRawPath(r))
	route, match := cpMatch(method, path)
	pattern := cpOtherPattern
	if route != nil {
		pattern = route.pattern
	}
	countRoute := workersPrefix + "{script_name}" + pattern
	s.core.Count(r.Method+" "+countRoute, false)
	if s.cpFaults(w, r, countRoute) {
		return
	}
	if s.assetsServe(w, r, path) {
		return
	}

	s.mu.Lock()
	ws, status, err := s.cpLookupLocked(r.PathValue("script_name"))
	var env *cpScript
	if err == nil {
		env = scriptEnv(ws)
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteJSON(w, status, map[string]string{"error": err.Error()})
		return
	}

	// 1. The DB binding is checked before anything else, /health included.
	if !env.bound["DB"] {
		cpWriteJSON(w, http.StatusServiceUnavailable, cpError{"Database not configured"})
		return
	}
	c := &cpCall{r: r, script: env, method: method, path: path, match: match, requestID: core.NewHexID()[:8], traceID: r.Header.Get("x-trace-id")}
	if c.traceID == "" {
		c.traceID = core.NewUUID()
	}
	// 2. CORS preflight, for any path.
	if method == http.MethodOptions {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
		h.Set("Access-Control-Max-Age", "86400")
		h.Set("x-request-id", c.requestID)
		h.Set("x-trace-id", c.traceID)
		w.WriteHeader(http.StatusOK)
		return
	}
	// 3. Routing.
	if route == nil {
		c.reply(w, http.StatusNotFound, cpError{"Not found"})
		return
	}
	// 4. Authentication.
	if !route.public {
		if status, reason := s.cpAuthenticate(c); status != 0 {
			c.reply(w, status, cpError{reason})
			return
		}
	}
	// 5. The deployment's SCM provider.
	provider, err := scmProvider(env.envText("SCM_PROVIDER"))
	if err != nil {
		c.reply(w, http.StatusInternalServerError, cpError{err.Error()})
		return
	}
	if route.githubOnly && provider != "github" {
		c.reply(w, http.StatusNotImplemented, cpError{fmt.Sprintf("SCM provider '%s' is not implemented in this deployment.", provider)})
		return
	}
	route.handle(s, w, c)
}

// cpMatch finds the route for method and pathname, like upstream: the first
// route whose method is equal and whose pattern matches.
func cpMatch(method, path string) (*cpRoute, []string) {
	for i := range cpRoutes {
		rt := &cpRoutes[i]
		if rt.method != method {
			continue
		}
		if m := rt.re.FindStringSubmatch(path); m != nil {
			return rt, m
		}
	}
	return nil, nil
}

// fetchMethod normalizes the methods the Fetch standard upper-cases.
func fetchMethod(m string) string {
	switch u := strings.ToUpper(m); u {
	case "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT":
		return u
	}
	return m
}

// cpRawPath is the request path as sent, after /__workers/<script>, with no
// decoding; "" when nothing follows the script name.
func cpRawPath(r *http.Request) string {
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	if !strings.HasPrefix(uri, "/") {
		// Absolute-form request target.
		if u, err := url.Parse(uri); err == nil {
			uri = u.EscapedPath()
		}
	}
	p, _, _ := strings.Cut(uri, "?")
	p = strings.TrimPrefix(p, workersPrefix)
	if _, rest, ok := strings.Cut(p, "/"); ok {
		return "/" + rest
	}
	return ""
}

// cpPathname is the pathname a worker's URL parser (WHATWG, https) gives for
// a raw path: '\' is a '/', and bytes of the path percent-encode set (C0
// controls, space, " # < > ? ` { } and everything above 0x7E) are
// percent-encoded; existing %XX escapes are kept as they are. Dot segments
// and empty segments never get here: Go's ServeMux redirects such paths.
func cpPathname(raw string) string {
	if raw == "" {
		return "/"
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\':
			b.WriteByte('/')
		case c < 0x20 || c > 0x7e || strings.IndexByte(" \"#<>?`{}", c) >= 0:
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

// cpCanonicalQuery canonicalizes a raw query string as sig1 does: parse it
// as application/x-www-form-urlencoded (split on '&', skip empty pieces, cut
// at the first '=', '+' is a space, %XX decoded, invalid UTF-8 replaced),
// sort the pairs bytewise by key NUL value (stable), re-encode key and value
// like encodeURIComponent and join "k=v" with '&'.
func cpCanonicalQuery(raw string) string {
	type pair struct{ k, v, sortKey string }
	var pairs []pair
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		k, v, _ := strings.Cut(piece, "=")
		k, v = formDecode(k), formDecode(v)
		pairs = append(pairs, pair{k, v, k + "\x00" + v})
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].sortKey < pairs[j].sortKey })
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = encodeURIComponent(p.k) + "=" + encodeURIComponent(p.v)
	}
	return strings.Join(out, "&")
}

// formDecode is the urlencoded parser's name/value decoding.
func formDecode(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return decodeUTF8Replacing(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// decodeUTF8Replacing decodes UTF-8 the way the Encoding standard does: each
// maximal invalid subsequence becomes one U+FFFD (Go's range loop would give
// one per byte).
func decodeUTF8Replacing(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	needed, seen, cp := 0, 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; i < len(b); {
		c := b[i]
		if needed == 0 {
			i++
			switch {
			case c <= 0x7F:
				out.WriteByte(c)
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, int(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				} else if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, int(c&0x0F)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				} else if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, int(c&0x07)
			default:
				out.WriteRune(utf8.RuneError)
			}
			continue
		}
		if c < lower || c > upper {
			// The byte is processed again as the start of a sequence.
			needed, seen, cp = 0, 0, 0
			lower, upper = 0x80, 0xBF
			out.WriteRune(utf8.RuneError)
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | int(c&0x3F)
		seen++
		i++
		if seen == needed {
			out.WriteRune(rune(cp))
			needed, seen, cp = 0, 0, 0
		}
	}
	if needed != 0 {
		out.WriteRune(utf8.RuneError)
	}
	return out.String()
}

// encodeURIComponent escapes everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func encodeURIComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// sig1Canonical is the string a sig1 signature covers.
func sig1Canonical(service string, timestampMs int64, nonce, method, pathname, canonicalQuery, bodySHA256Hex, actor string) string {
	return "sig1\n" + service + "\n" + strconv.FormatInt(timestampMs, 10) + "\n" + nonce + "\n" +
		strings.ToUpper(method) + "\n" + pathname + "\n" + canonicalQuery + "\n" + bodySHA256Hex + "\n" + actor
}

// parseSig1 checks the header's grammar, then its freshness.
func parseSig1(header string, now time.Time) (timestampMs int64, nonce, mac string, reason string) {
	parts := strings.Split(header, ".")
	if len(parts) != 4 || parts[0] != "sig1" || !cpTimestampRE.MatchString(parts[1]) {
		return 0, "", "", "format"
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ts <= 0 {
		return 0, "", "", "format"
	}
	if !cpNonceRE.MatchString(parts[2]) || !cpMACRE.MatchString(parts[3]) {
		return 0, "", "", "format"
	}
	if d := now.UnixMilli() - ts; d > cpSignatureValidity.Milliseconds() || -d > cpSignatureValidity.Milliseconds() {
		return 0, "", "", "expired"
	}
	return ts, parts[2], parts[3], ""
}

// headerValue is Headers.get: the values of every field of that name joined
// by ", ", and whether there was any.
func headerValue(r *http.Request, name string) (string, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return strings.Join(vs, ", "), true
}

// cpAuthenticate is upstream's authentication of a user-or-service route by
// a service signature. It returns 0 when the request may proceed (c.body then
// holds the body), else the status and the error message.
func (s *Server) cpAuthenticate(c *cpCall) (int, string) {
	const unauthorized = "Unauthorized"
	header, present := headerValue(c.r, "X-OpenInspect-Service-Signature")
	if !present {
		return http.StatusUnauthorized, unauthorized
	}
	service, _ := headerValue(c.r, "X-OpenInspect-Service")
	keyName, known := cpServiceKeys[service]
	if !known {
		return http.StatusUnauthorized, unauthorized
	}
	secret := c.script.envText(keyName)
	if secret == "" {
		return http.StatusInternalServerError, "Service authentication not configured"
	}
	ts, nonce, mac, reason := parseSig1(header, time.Now())
	if reason != "" {
		return http.StatusUnauthorized, unauthorized
	}
	body, err := io.ReadAll(io.LimitReader(c.r.Body, cpMaxSignedBody+1))
	if err != nil {
		return http.StatusBadRequest, "Could not read the request body"
	}
	if len(body) > cpMaxSignedBody {
		return http.StatusRequestEntityTooLarge, "Request body too large"
	}
	actor, _ := headerValue(c.r, "X-OpenInspect-Actor")
	sum := sha256.Sum256(body)
	canonical := sig1Canonical(service, ts, nonce, c.method, c.path, cpCanonicalQuery(c.r.URL.RawQuery), hex.EncodeToString(sum[:]), actor)
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(canonical))
	if !hmac.Equal([]byte(hex.EncodeToString(h.Sum(nil))), []byte(mac)) {
		return http.StatusUnauthorized, unauthorized
	}
	// A reused nonce is accepted: upstream only logs the reuse.
	if actor != "" {
		ns, id, ok := strings.Cut(actor, ":")
		if !ok || ns == "" || id == "" || cpActorNamespace[service] != ns {
			return http.StatusUnauthorized, unauthorized
		}
	}
	if service == "web" {
		// A web signature on a user route also needs a Better Auth browser
		// session, which the emulator never has.
		return http.StatusUnauthorized, unauthorized
	}
	c.body = body
	return 0, ""
}

// scmProvider resolves SCM_PROVIDER as upstream does.
func scmProvider(v string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(v))
	switch n {
	case "":
		return "github", nil
	case "github", "bitbucket", "gitlab":
		return n, nil
	}
	//lint:ignore ST1005 upstream's message, verbatim
	return "", fmt.Errorf("Invalid SCM_PROVIDER value '%s'. Supported values: github, bitbucket, gitlab.", n)
}

// cpError is upstream's error body.
type cpError struct {
	Error string `json:"error"`
}

// reply writes a JSON answer with the headers upstream adds to every routed
// response.
func (c *cpCall) reply(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("x-request-id", c.requestID)
	h.Set("x-trace-id", c.traceID)
	cpWriteJSON(w, status, v)
}

// cpWriteJSON writes v the way JSON.stringify does: compact, no trailing
// newline, no HTML escaping.
func cpWriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) cpHealth(w http.ResponseWriter, c *cpCall) {
	c.reply(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Service string `json:"service"`
	}{"healthy", "open-inspect-control-plane"})
}

// cpValidationError is upstream's SecretsValidationError: a 400.
type cpValidationError struct{ msg string }

func (e *cpValidationError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &cpValidationError{fmt.Sprintf(format, args...)}
}

// normalizeSecretKey upper-cases a key, as upstream stores every key.
func normalizeSecretKey(k string) string { return strings.ToUpper(k) }

func validateSecretKey(k string) error {
	if k == "" || utf16Len(k) > cpMaxKeyLength {
		return invalid("Key too long or empty")
	}
	if !cpKeyRE.MatchString(k) {
		return invalid("Key must match [A-Za-z_][A-Za-z0-9_]*")
	}
	if cpReservedKeys[strings.ToUpper(k)] {
		return invalid("Key '%s' is reserved", k)
	}
	return nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// jsEntry is one own property of a parsed JSON object or array.
type jsEntry struct {
	key   string
	value json.RawMessage
}

// jsEntries lists an object's or array's entries in JavaScript's property
// order (Object.entries): array-index keys in ascending numeric order, then
// the other keys in insertion order; a repeated key keeps its first position
// and its last value, as JSON.parse does.
func jsEntries(raw json.RawMessage) ([]jsEntry, error) {
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		out := make([]jsEntry, len(items))
		for i, v := range items {
			out[i] = jsEntry{strconv.Itoa(i), v}
		}
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []jsEntry
	pos := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if i, ok := pos[key]; ok {
			out[i].value = v
			continue
		}
		pos[key] = len(out)
		out = append(out, jsEntry{key, v})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, aIdx := arrayIndex(out[i].key)
		b, bIdx := arrayIndex(out[j].key)
		if aIdx && bIdx {
			return a < b
		}
		return aIdx && !bIdx
	})
	return out, nil
}

// arrayIndex reports whether k is a canonical array index (0 .. 2^32-2).
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}

// jsTruthy reports whether a JSON value is truthy in JavaScript.
func jsTruthy(raw json.RawMessage) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return false
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	}
	return true
}

// secretsInput extracts body.secrets as upstream's PUT handler checks it:
// present, truthy and of type object (arrays included).
func secretsInput(body []byte) ([]jsEntry, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if !json.Valid(body) {
		//lint:ignore ST1005 upstream's message, verbatim
		return nil, errors.New("Invalid JSON body")
	}
	//lint:ignore ST1005 upstream's message, verbatim
	missing := errors.New("Request body must include secrets object")
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil, missing // not an object: it has no "secrets"
	}
	raw, ok := top["secrets"]
	if !ok || !jsTruthy(raw) {
		return nil, missing
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return nil, missing
	}
	return jsEntries(raw)
}

// prepareSecrets normalizes and validates every entry, in order, then the
// total size; it returns the normalized keys in order and their values.
func prepareSecrets(entries []jsEntry) ([]string, map[string]string, error) {
	keys := []string{}
	values := map[string]string{}
	total := 0
	for _, e := range entries {
		key := normalizeSecretKey(e.key)
		if err := validateSecretKey(key); err != nil {
			return nil, nil, err
		}
		var v string
		if t := bytes.TrimSpace(e.value); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &v) != nil {
			return nil, nil, invalid("Value must be a string")
		}
		if len(v) > cpMaxValueBytes {
			return nil, nil, invalid("Value exceeds %d bytes", cpMaxValueBytes)
		}
		if _, dup := values[key]; dup {
			return nil, nil, invalid("Duplicate secret key '%s' after normalization", key)
		}
		total += len(v)
		keys = append(keys, key)
		values[key] = v
	}
	if total > cpMaxTotalBytes {
		return nil, nil, invalid("Total secret size exceeds %d bytes", cpMaxTotalBytes)
	}
	return keys, values, nil
}

// encryptionKeyUsable reports whether upstream could import the key for
// AES-GCM: atob (forgiving base64) must decode it to 16, 24 or 32 bytes.
func encryptionKeyUsable(k string) bool {
	k = strings.Map(func(r rune) rune {
		if strings.ContainsRune("\t\n\f\r ", r) {
			return -1
		}
		return r
	}, k)
	if len(k)%4 == 0 {
		k = strings.TrimSuffix(k, "=")
		k = strings.TrimSuffix(k, "=")
	}
	if len(k)%4 == 1 || strings.ContainsRune(k, '=') {
		return false
	}
	b, err := base64.RawStdEncoding.DecodeString(k)
	if err != nil {
		return false
	}
	return len(b) == 16 || len(b) == 24 || len(b) == 32
}

const cpStorageUnavailable = "Secrets storage unavailable"

//lint:ignore ST1005 upstream's message, verbatim
var errCPStorageUnavailable = errors.New(cpStorageUnavailable)

func (s *Server) cpPutSecrets(w http.ResponseWriter, c *cpCall) {
	encKey := c.script.envText("REPO_SECRETS_ENCRYPTION_KEY")
	if encKey == "" {
		c.reply(w, http.StatusInternalServerError, cpError{"REPO_SECRETS_ENCRYPTION_KEY not configured"})
		return
	}
	entries, err := secretsInput(c.body)
	if err != nil {
		c.reply(w, http.StatusBadRequest, cpError{err.Error()})
		return
	}
	keys, values, err := prepareSecrets(entries)
	if err != nil {
		c.reply(w, http.StatusBadRequest, cpError{err.Error()})
		return
	}

	storeKey := wkKey(c.script.account, c.script.name)
	var created, updated int
	s.mu.Lock()
	store := s.st.AppSecrets[storeKey]
	netNew := 0
	for _, k := range keys {
		if _, ok := store[k]; !ok {
			netNew++
		}
	}
	switch {
	case len(store)+netNew > cpMaxSecrets:
		err = invalid("Global secrets would exceed %d secrets limit (current: %d, adding: %d)", cpMaxSecrets, len(store), netNew)
	case len(keys) > 0 && !encryptionKeyUsable(encKey):
		// Upstream fails to import the AES key while encrypting.
		err = errCPStorageUnavailable
	case len(keys) > 0:
		if store == nil {
			store = map[string]*appSecret{}
			s.st.AppSecrets[storeKey] = store
		}
		now := time.Now().UnixMilli()
		for _, k := range keys {
			if old, ok := store[k]; ok {
				old.Value, old.UpdatedAt = values[k], now
				updated++
			} else {
				store[k] = &appSecret{Value: values[k], CreatedAt: now, UpdatedAt: now}
				created++
			}
		}
	}
	s.mu.Unlock()
	if err == nil && len(keys) > 0 {
		if serr := s.save(); serr != nil {
			err = errCPStorageUnavailable
		}
	}
	var ve *cpValidationError
	switch {
	case errors.As(err, &ve):
		c.reply(w, http.StatusBadRequest, cpError{err.Error()})
		return
	case err != nil:
		c.reply(w, http.StatusServiceUnavailable, cpError{err.Error()})
		return
	}
	c.reply(w, http.StatusOK, struct {
		Status  string   `json:"status"`
		Keys    []string `json:"keys"`
		Created int      `json:"created"`
		Updated int      `json:"updated"`
	}{"updated", keys, created, updated})
}

// cpSecretMeta is one entry of GET /secrets: never the value.
type cpSecretMeta struct {
	Key       string `json:"key"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
}

func (s *Server) cpListSecrets(w http.ResponseWriter, c *cpCall) {
	if c.script.envText("REPO_SECRETS_ENCRYPTION_KEY") == "" {
		c.reply(w, http.StatusInternalServerError, cpError{"REPO_SECRETS_ENCRYPTION_KEY not configured"})
		return
	}
	s.mu.Lock()
	store := s.st.AppSecrets[wkKey(c.script.account, c.script.name)]
	out := []cpSecretMeta{}
	for _, k := range core.SortedKeys(store) {
		out = append(out, cpSecretMeta{Key: k, CreatedAt: store[k].CreatedAt, UpdatedAt: store[k].UpdatedAt})
	}
	s.mu.Unlock()
	c.reply(w, http.StatusOK, struct {
		Secrets []cpSecretMeta `json:"secrets"`
	}{out})
}

func (s *Server) cpDeleteSecret(w http.ResponseWriter, c *cpCall) {
	if c.script.envText("REPO_SECRETS_ENCRYPTION_KEY") == "" {
		c.reply(w, http.StatusInternalServerError, cpError{"REPO_SECRETS_ENCRYPTION_KEY not configured"})
		return
	}
	// The key is the path segment as the worker sees it: not percent-decoded.
	key := normalizeSecretKey(c.match[1])
	if err := validateSecretKey(key); err != nil {
		c.reply(w, http.StatusBadRequest, cpError{err.Error()})
		return
	}
	storeKey := wkKey(c.script.account, c.script.name)
	s.mu.Lock()
	_, found := s.st.AppSecrets[storeKey][key]
	if found {
		delete(s.st.AppSecrets[storeKey], key)
		if len(s.st.AppSecrets[storeKey]) == 0 {
			delete(s.st.AppSecrets, storeKey)
		}
	}
	s.mu.Unlock()
	if !found {
		c.reply(w, http.StatusNotFound, cpError{"Secret not found"})
		return
	}
	if err := s.save(); err != nil {
		c.reply(w, http.StatusServiceUnavailable, cpError{cpStorageUnavailable})
		return
	}
	c.reply(w, http.StatusOK, struct {
		Status string `json:"status"`
		Key    string `json:"key"`
	}{"deleted", key})
}

// cpFaults applies injected faults whose Route is a /__workers/ pattern (a
// Route of "" only ever matches Cloudflare routes). Errors are plain JSON, as
// a worker would answer, not Cloudflare envelopes.
func (s *Server) cpFaults(w http.ResponseWriter, r *http.Request, route string) bool {
	delay, f := s.core.TakeFaults(r.Method, route)
	return s.core.ServeFault(w, r, delay, f, workerFaultAnswers)
}

// workerFaultAnswers answer in plain JSON, as a worker would.
var workerFaultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, _ *Fault) {
		cpWriteJSON(w, http.StatusTooManyRequests, cpError{"Too many requests"})
	},
	ServerError: func(w http.ResponseWriter, f *Fault) {
		cpWriteJSON(w, f.Status, cpError{"Internal server error"})
	},
}

// AppSecrets returns the global secrets stored by the control-plane script
// (values included, for tests), or false when the account has no script of
// that name serving as a control plane. A control plane with nothing stored
// gives an empty map.
func (s *Server) AppSecrets(accountID, script string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.st.Workers[wkKey(accountID, script)]
	if !ok || !isControlPlane(ws) {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range s.st.AppSecrets[wkKey(accountID, script)] {
		out[k] = v.Value
	}
	return out, true
}

// WipeAppSecrets empties a script's secrets store, as if its database had
// been wiped behind the provider's back.
func (s *Server) WipeAppSecrets(accountID, script string) {
	s.mu.Lock()
	_, had := s.st.AppSecrets[wkKey(accountID, script)]
	delete(s.st.AppSecrets, wkKey(accountID, script))
	s.mu.Unlock()
	if had {
		if err := s.save(); err != nil && s.logf != nil {
			s.logf("WipeAppSecrets: %v", err)
		}
	}
}
