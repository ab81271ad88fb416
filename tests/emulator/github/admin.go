package github

// The stand-in's configuration and inventory, from Go and under
// /__emulator/github (plain JSON, never counted):
//
//	GET /__emulator/github                      the inventory, and browser_url
//	PUT /__emulator/github/users/{login}        a User
//	PUT /__emulator/github/oauth-apps/{client}  an OAuthApp (client_secret required; stored hashed)
//	PUT /__emulator/github/apps/{id}            an App; a missing public_key or installations keeps the current ones
//	POST /__emulator/github/apps/{id}/keys      a new key pair, as GitHub's "Generate a private key": the
//	                                            public half configured, the private key answered (PKCS#8
//	                                            PEM, the form upstream imports) and kept nowhere
//	GET|PUT /__emulator/github/apps/{id}/public-key   the public key, as PEM

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

var webFaultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
		writePage(w, http.StatusTooManyRequests, "Too many requests", "Whoa there! You have triggered an abuse detection mechanism.")
	},
	ServerError: func(w http.ResponseWriter, f *core.Fault) {
		writePage(w, f.Status, "Server error", "GitHub is having trouble (emulated).")
	},
}

var apiFaultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
		writeAPIError(w, http.StatusForbidden, "API rate limit exceeded", "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api")
	},
	ServerError: func(w http.ResponseWriter, f *core.Fault) {
		writeAPIError(w, f.Status, "Server Error", docsRoot)
	},
}

// PutUser adds or replaces a local user.
func (s *Service) PutUser(u User) error {
	s.mu.Lock()
	err := s.putUserLocked(u)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.save()
}

// PutOAuthApp adds or replaces an OAuth client (its secret is kept hashed).
func (s *Service) PutOAuthApp(a OAuthApp) error {
	s.mu.Lock()
	err := s.putOAuthAppLocked(a)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.save()
}

// PutApp adds or replaces a GitHub App; an empty PublicKeyPEM keeps the
// configured one, and nil Installations keep the current installations.
func (s *Service) PutApp(a App) error {
	s.mu.Lock()
	if old := s.st.Apps[a.ID]; old != nil && a.Installations == nil {
		a.Installations = old.Installations
	}
	err := s.putAppLocked(a, true)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.save()
}

// Inventory is the stand-in's part of /__emulator/inventory: no secret,
// no digest of one.
type Inventory struct {
	Users     []User     `json:"users"`
	OAuthApps []OAuthApp `json:"oauth_apps"` // without their secrets
	Apps      []AppEntry `json:"apps"`
	SignIns   []SignIn   `json:"sign_ins"`
	// UserTokens and InstallationTokens count the live tokens.
	UserTokens         int `json:"user_tokens"`
	InstallationTokens int `json:"installation_tokens"`
	// PullRequests are the pull requests opened, by "owner/name".
	PullRequests map[string][]PullRequest `json:"pull_requests"`
}

// AppEntry is an App as the inventory shows it.
type AppEntry struct {
	ID            string         `json:"id"`
	Name          string         `json:"name,omitempty"`
	HasPublicKey  bool           `json:"has_public_key"`
	Installations []Installation `json:"installations"`
}

// Inventory lists the configuration and what happened.
func (s *Service) Inventory() Inventory {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := Inventory{Users: []User{}, OAuthApps: []OAuthApp{}, Apps: []AppEntry{},
		SignIns: append([]SignIn{}, s.st.SignIns...), UserTokens: len(s.st.UserTokens), PullRequests: map[string][]PullRequest{}}
	for k, prs := range s.st.PullRequests {
		for _, pr := range prs {
			inv.PullRequests[k] = append(inv.PullRequests[k], *pr)
		}
	}
	for _, k := range core.SortedKeys(s.st.Users) {
		inv.Users = append(inv.Users, *s.st.Users[k])
	}
	for _, k := range core.SortedKeys(s.st.OAuthApps) {
		a := s.st.OAuthApps[k]
		inv.OAuthApps = append(inv.OAuthApps, OAuthApp{ClientID: a.ClientID, Name: a.Name, CallbackURL: a.CallbackURL})
	}
	for _, k := range core.SortedKeys(s.st.Apps) {
		a := s.st.Apps[k]
		inv.Apps = append(inv.Apps, AppEntry{ID: a.ID, Name: a.Name, HasPublicKey: a.PublicKeyPEM != "", Installations: a.Installations})
	}
	for _, t := range s.st.InstallationTokens {
		if now.Before(t.ExpiresAt) {
			inv.InstallationTokens++
		}
	}
	sort.SliceStable(inv.SignIns, func(i, j int) bool { return inv.SignIns[i].At.Before(inv.SignIns[j].At) })
	return inv
}

func (s *Service) registerAdmin() {
	const base = "/__emulator/github"
	s.mux.HandleFunc("GET "+base, func(w http.ResponseWriter, _ *http.Request) {
		// The browser origin's URL changes with each start: not inventory.
		core.WriteJSON(w, http.StatusOK, struct {
			Inventory
			BrowserURL string `json:"browser_url"`
		}{s.Inventory(), s.BrowserURL()})
	})
	put := func(path string, decode func(w http.ResponseWriter, r *http.Request) error) {
		s.mux.HandleFunc("PUT "+base+path, func(w http.ResponseWriter, r *http.Request) {
			if err := decode(w, r); err != nil {
				core.AdminError(w, http.StatusBadRequest, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}
	put("/users/{login}", func(w http.ResponseWriter, r *http.Request) error {
		var u User
		if err := core.AdminDecode(w, r, &u); err != nil {
			return err
		}
		u.Login = r.PathValue("login")
		return s.PutUser(u)
	})
	put("/oauth-apps/{client_id}", func(w http.ResponseWriter, r *http.Request) error {
		var a OAuthApp
		if err := core.AdminDecode(w, r, &a); err != nil {
			return err
		}
		a.ClientID = r.PathValue("client_id")
		return s.PutOAuthApp(a)
	})
	s.mux.HandleFunc("POST "+base+"/apps/{app_id}/keys", func(w http.ResponseWriter, r *http.Request) {
		private, err := s.GenerateAppKey(r.PathValue("app_id"))
		if err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(private)
	})
	s.mux.HandleFunc("GET "+base+"/apps/{app_id}/public-key", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		app := s.st.Apps[r.PathValue("app_id")]
		var key string
		if app != nil {
			key = app.PublicKeyPEM
		}
		s.mu.Unlock()
		if key == "" {
			core.AdminError(w, http.StatusNotFound, fmt.Errorf("GitHub App %s has no public key", r.PathValue("app_id")))
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = io.WriteString(w, key)
	})
	put("/apps/{app_id}/public-key", func(w http.ResponseWriter, r *http.Request) error {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			return err
		}
		return s.PutApp(App{ID: r.PathValue("app_id"), PublicKeyPEM: string(b)})
	})
	put("/apps/{app_id}", func(w http.ResponseWriter, r *http.Request) error {
		var a App
		if err := core.AdminDecode(w, r, &a); err != nil {
			return err
		}
		a.ID = strings.TrimSpace(r.PathValue("app_id"))
		return s.PutApp(a)
	})
}

// GenerateAppKey makes a new RSA key pair for the GitHub App appID (which
// must exist), configures its public half and returns the private key as
// PKCS#8 PEM. The private key is kept nowhere: like GitHub's download, it
// is the caller's to keep.
func (s *Service) GenerateAppKey(appID string) ([]byte, error) {
	s.mu.Lock()
	_, ok := s.st.Apps[appID]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("no GitHub App " + appID + " here")
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := s.PutApp(App{ID: appID, PublicKeyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))}); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
