package workers

// What a control plane stored in its global secrets, for tests: the fixture
// control plane (tests/fixtures/upstream/packages/control-plane), like
// upstream's, keeps them in the D1 database bound as DB, in the table
// global_secrets (key, encrypted_value, created_at, updated_at), each value
// AES-256-GCM encrypted under REPO_SECRETS_ENCRYPTION_KEY (base64 of
// 32 bytes) and stored as base64 of the 12-byte IV followed by the
// ciphertext and tag. The emulator reads the rows through SQLite and decrypts
// them with the key the script is bound: nothing here keeps a copy.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

const (
	appSecretsTable  = "global_secrets"
	appSecretsKeyVar = "REPO_SECRETS_ENCRYPTION_KEY"
)

// controlPlaneDBLocked is the database a script binds as DB and the text of
// its binding named keyVar.
func (s *Service) controlPlaneDBLocked(ws *workerScript) (string, string, error) {
	var dbID, key string
	for _, raw := range ws.Bindings {
		var b bindingSpec
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch {
		case b.Type == "d1" && b.Name == "DB":
			dbID = b.ID
		case b.Name == appSecretsKeyVar && b.Text != nil:
			key = *b.Text
		}
	}
	if dbID == "" {
		return "", "", errors.New("the script binds no D1 database as DB")
	}
	if !s.d1.Exists(ws.AccountID, dbID) {
		return "", "", fmt.Errorf("the DB binding names database %s, which does not exist", dbID)
	}
	return dbID, key, nil
}

// appSecretRows reads global_secrets; a database without the table holds
// none.
func (s *Service) appSecretRows(acct, dbID string) ([][]any, error) {
	ctx := context.Background()
	tables, err := s.d1.Query(ctx, acct, dbID, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", appSecretsTable)
	if err != nil || len(tables) == 0 {
		return nil, err
	}
	return s.d1.Query(ctx, acct, dbID, "SELECT key, encrypted_value FROM "+appSecretsTable+" ORDER BY key")
}

// AppSecrets returns the global secrets the account's script stored,
// decrypted (for tests), or false when there is no such script or it binds
// no database as DB. A control plane with nothing stored gives an empty map.
func (s *Service) AppSecrets(accountID, script string) (map[string]string, bool) {
	s.mu.Lock()
	ws := s.st.Workers[wkKey(accountID, script)]
	var dbID, key string
	var err error
	if ws != nil {
		dbID, key, err = s.controlPlaneDBLocked(ws)
	}
	s.mu.Unlock()
	if ws == nil || err != nil {
		return nil, false
	}
	rows, err := s.appSecretRows(accountID, dbID)
	if err != nil {
		return nil, false
	}
	out := map[string]string{}
	for _, row := range rows {
		name, _ := row[0].(string)
		enc, _ := row[1].(string)
		plain, err := decryptAppSecret(key, enc)
		if err != nil {
			plain = "<undecryptable: " + err.Error() + ">"
		}
		out[name] = plain
	}
	return out, true
}

// WipeAppSecrets deletes every stored global secret of the script, as if
// someone emptied the store behind the provider's back.
func (s *Service) WipeAppSecrets(accountID, script string) {
	s.mu.Lock()
	ws := s.st.Workers[wkKey(accountID, script)]
	var dbID string
	var err error
	if ws != nil {
		dbID, _, err = s.controlPlaneDBLocked(ws)
	}
	s.mu.Unlock()
	if ws == nil || err != nil {
		return
	}
	if rows, _ := s.appSecretRows(accountID, dbID); rows != nil {
		_, _ = s.d1.Query(context.Background(), accountID, dbID, "DELETE FROM "+appSecretsTable)
	}
}

func decryptAppSecret(keyB64, enc string) (string, error) {
	key, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil || len(key) != 32 {
		return "", errors.New("the encryption key is not base64 of 32 bytes")
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(data) < 12+16 {
		return "", errors.New("the stored value is not base64 of IV and ciphertext")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return "", err
	}
	plain, err := gcm.Open(nil, data[:12], data[12:], nil)
	if err != nil {
		return "", errors.New("the stored value does not decrypt under the key")
	}
	return string(plain), nil
}
