package provider_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFamiliesImportOnlyWhatTheirDocAllows holds the layout the package docs
// describe: the resource families (cloudflare, tenant, sandbox) and config
// import no family, the shared internal packages import no family, and only
// the component (installation) composes the families, and no package of the
// provider imports the tests' tree (tests/, the emulator among it): the
// plugin ships without them. A cycle would fail `go list` itself.
func TestFamiliesImportOnlyWhatTheirDocAllows(t *testing.T) {
	const module = "github.com/openinspect/pulumi-openinspect/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "./...").Output()
	require.NoError(t, err, "go list ./provider/...")
	families := []string{"provider/cloudflare", "provider/tenant", "provider/sandbox", "provider/installation"}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		pkg = strings.TrimPrefix(pkg, module)
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module+"tests/") {
				t.Errorf("%s imports %s: only tests may import the tests' tree", pkg, strings.TrimPrefix(imp, module))
			}
		}
		if pkg == "provider" || strings.HasPrefix(pkg, "provider/installation") || strings.HasPrefix(pkg, "provider/cmd/") {
			continue // the composers: New(), the component, the binaries
		}
		seen++
		for _, imp := range strings.Fields(imports) {
			imp = strings.TrimPrefix(imp, module)
			for _, family := range families {
				if imp == family || strings.HasPrefix(imp, family+"/") {
					if !strings.HasPrefix(pkg, family) {
						t.Errorf("%s imports the %s family: only provider and provider/installation compose families", pkg, family)
					}
				}
			}
		}
	}
	require.Greater(t, seen, 10, "the provider's packages were listed")
}
