package drift

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// TestEmulatorDocsListEveryCredential: the README and docs/emulator.md
// name the credential each emulated API accepts by default and whom it
// belongs to, so a user pointing a client at the emulator finds it without
// reading Go.
func TestEmulatorDocsListEveryCredential(t *testing.T) {
	credentials := map[string]string{
		"Cloudflare token": emulator.DefaultToken, "Cloudflare account": emulator.DefaultAccountID,
		"Modal token ID": modal.DefaultTokenID, "Modal token secret": modal.DefaultTokenSecret, "Modal workspace": modal.DefaultWorkspace,
		"Daytona key": daytona.DefaultAPIKey, "Daytona organization": daytona.DefaultOrganizationID,
		"E2B key": e2b.DefaultAPIKey, "E2B team": e2b.DefaultTeamID,
		"OpenComputer key": opencomputer.DefaultAPIKey, "OpenComputer org": opencomputer.DefaultOrgID,
		"Vercel token": vercel.DefaultToken, "Vercel team": vercel.DefaultTeamID,
		"GitHub OAuth client": github.DefaultOAuthClientID, "GitHub OAuth secret": github.DefaultOAuthClientSecret,
		"GitHub App": github.DefaultAppID, "GitHub user": github.DefaultLogin, "GitHub outsider": github.OutsiderLogin,
		"GitHub org": github.DefaultOrg,
	}
	for _, page := range []string{"README.md", filepath.Join("docs", "emulator.md")} {
		raw, err := os.ReadFile(filepath.Join(repoRoot(t), page))
		require.NoError(t, err)
		for what, value := range credentials {
			assert.Contains(t, string(raw), "`"+value+"`", "%s names the %s", page, what)
		}
	}
}
