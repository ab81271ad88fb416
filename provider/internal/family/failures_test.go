package family

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
)

func TestReadableMovesThePathIntoTheReason(t *testing.T) {
	got := Readable([]p.CheckFailure{
		{Property: "observability.headSamplingRate", Reason: "must be between 0 and 1"},
		{Reason: "set either migrations or directory, not both"},
		{Property: `vars["a: b"]`, Reason: "not a valid binding name"},
	})
	assert.Equal(t, []p.CheckFailure{
		{Reason: "observability.headSamplingRate: must be between 0 and 1"},
		{Reason: "set either migrations or directory, not both"},
		{Reason: `vars["a: b"]: not a valid binding name`},
	}, got)
	for i, want := range []string{"observability.headSamplingRate", "", `vars["a: b"]`} {
		assert.Equal(t, want, FailureField(got[i]), "failure %d", i)
	}
	path, problem := SplitReason(got[2].Reason)
	assert.Equal(t, `vars["a: b"]`, path)
	assert.Equal(t, "not a valid binding name", problem)
	assert.Empty(t, Readable(nil))
	path, _ = SplitReason("secrets[0].values.bad key: not a valid name")
	assert.Equal(t, "secrets[0].values.bad key", path, "a plain key may hold a space")
}

func TestSplitReasonWithoutAPath(t *testing.T) {
	for _, reason := range []string{"set either migrations or directory, not both", "", "name", `x["unterminated: y`} {
		path, problem := SplitReason(reason)
		assert.Empty(t, path, reason)
		assert.Equal(t, reason, problem)
	}
}

func TestProblemsByFieldKeysEachProblemByItsField(t *testing.T) {
	got := ProblemsByField([]p.CheckFailure{
		{Property: "name", Reason: "too long"},
		{Reason: "vars.DB: not a valid binding name"},
		{Property: "name", Reason: "not lower-case"},
	})
	assert.Equal(t, map[string]string{"name": "not lower-case", "vars.DB": "not a valid binding name"}, got)
	assert.Empty(t, ProblemsByField(nil))
}
