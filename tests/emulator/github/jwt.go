package github

// A GitHub App's JWT, checked as GitHub documents it: RS256 over the
// base64url header and payload, signed with the app's private key; iss is
// the app's ID (or client ID); iat not in the future; exp in the future and
// no more than ten minutes ahead.

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// jwtSkew is the clock drift tolerated on iat and exp.
const jwtSkew = 60 * time.Second

// GitHub's messages for a JWT it refuses (401).
const (
	jwtUndecodable = "A JSON web token could not be decoded"
	jwtExpired     = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	jwtTooLong     = "'Expiration time' claim ('exp') is too far in the future"
	jwtIssuedLater = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
)

// parsePublicKey reads an RSA public key in PEM: PKIX ("PUBLIC KEY") or
// PKCS#1 ("RSA PUBLIC KEY").
func parsePublicKey(s string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("the public key is not PEM")
	}
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the public key: %w", err)
		}
		rk, ok := k.(*rsa.PublicKey)
		if !ok {
			return nil, errors.New("the public key is not an RSA key (GitHub Apps sign with RS256)")
		}
		return rk, nil
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the public key: %w", err)
		}
		return k, nil
	}
	return nil, fmt.Errorf("the PEM block is %q, not a public key", block.Type)
}

// jwtError is a refusal: what GitHub says, and why (for the log only).
type jwtError struct{ message, why string }

func (e *jwtError) Error() string { return e.message + " (" + e.why + ")" }

// appForJWT returns the app whose key signed token. The caller holds s.mu.
func (s *Service) appForJWT(token string, now time.Time) (*App, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, &jwtError{jwtUndecodable, "not three dot-separated parts"}
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *json.Number    `json:"iat"`
		Exp *json.Number    `json:"exp"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return nil, &jwtError{jwtUndecodable, "header: " + err.Error()}
	}
	if header.Alg != "RS256" {
		return nil, &jwtError{jwtUndecodable, fmt.Sprintf("alg is %q, not RS256", header.Alg)}
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, &jwtError{jwtUndecodable, "payload: " + err.Error()}
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	app := s.st.Apps[iss]
	if app == nil {
		for _, a := range s.st.Apps {
			if a.ClientID != "" && a.ClientID == iss {
				app = a
			}
		}
	}
	if app == nil {
		return nil, &jwtError{jwtUndecodable, fmt.Sprintf("iss %q names no GitHub App here", iss)}
	}
	if app.PublicKeyPEM == "" {
		return nil, &jwtError{jwtUndecodable, fmt.Sprintf("GitHub App %s has no public key configured (PUT /__emulator/github/apps/%s {\"public_key\": PEM})", app.ID, app.ID)}
	}
	key, err := parsePublicKey(app.PublicKeyPEM)
	if err != nil {
		return nil, &jwtError{jwtUndecodable, err.Error()}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, &jwtError{jwtUndecodable, "signature is not base64url"}
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return nil, &jwtError{jwtUndecodable, fmt.Sprintf("the signature does not verify with GitHub App %s's public key", app.ID)}
	}
	iat, iatErr := numericDate(claims.Iat)
	if iatErr != nil || iat.After(now.Add(jwtSkew)) {
		return nil, &jwtError{jwtIssuedLater, "iat is missing, not a number, or in the future"}
	}
	exp, expErr := numericDate(claims.Exp)
	switch {
	case expErr != nil || !exp.After(now):
		return nil, &jwtError{jwtExpired, "exp is missing, not a number, or past"}
	case exp.After(now.Add(10*time.Minute + jwtSkew)):
		return nil, &jwtError{jwtTooLong, "exp is more than ten minutes ahead"}
	}
	return app, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return errors.New("not base64url")
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

// numericDate reads a JWT NumericDate given as an integer.
func numericDate(n *json.Number) (time.Time, error) {
	if n == nil {
		return time.Time{}, errors.New("absent")
	}
	secs, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(secs, 0), nil
}
