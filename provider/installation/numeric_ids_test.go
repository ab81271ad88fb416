package installation

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
)

// A YAML program's `appId: 123456` arrives as a number: it is the ID, as a
// string; a fraction or a non-positive number is left for CheckInputKinds.
func TestNumericIDsBecomeStrings(t *testing.T) {
	in := property.NewMap(map[string]property.Value{"githubApp": property.New(map[string]property.Value{
		"appId": property.New(123456.0), "installationId": property.New(7890123.0).WithSecret(true),
		"privateKey": property.New("k").WithSecret(true)})})
	out := NumericIDs(in).Get("githubApp").AsMap()
	assert.Equal(t, "123456", out.Get("appId").AsString())
	assert.Equal(t, "7890123", out.Get("installationId").AsString())
	assert.True(t, out.Get("installationId").Secret(), "a secret stays secret")
	// The field is a plain string, which the SDK cannot fill from a secret:
	// the refusal names it in words instead of the SDK's decoding error.
	assert.ErrorContains(t, CheckInputKinds(NumericIDs(in)), "githubApp.installationId: must be a plain value known at preview")
	plain := property.NewMap(map[string]property.Value{"githubApp": property.New(map[string]property.Value{
		"appId": property.New(123456.0), "installationId": property.New(7890123.0),
		"privateKey": property.New("k").WithSecret(true)})})
	assert.NoError(t, CheckInputKinds(NumericIDs(plain)))

	for _, n := range []float64{1.5, 0, -3} {
		bad := property.NewMap(map[string]property.Value{"githubApp": property.New(map[string]property.Value{"appId": property.New(n)})})
		assert.True(t, NumericIDs(bad).Get("githubApp").AsMap().Get("appId").IsNumber(), "%v is left as given", n)
		assert.Error(t, CheckInputKinds(NumericIDs(bad)))
	}
}
