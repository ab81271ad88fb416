package cloudflare

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Each new input's bad value is refused naming its field.
func TestWorkerSettingsValidationNamesFields(t *testing.T) {
	args := WorkerArgs{Name: "oi-w", Content: "export default {}", CompatibilityDate: "2024-09-23",
		WorkerSettings: WorkerSettings{
			Observability: &Observability{Enabled: true, HeadSamplingRate: new(1.5)},
			Placement:     &Placement{Mode: "smart", Region: "aws:us-east-1"},
			Limits:        &ScriptLimits{CPUMs: 0},
			Tags:          []string{ownerTagPrefix + "someone-else"},
			KeepBindings:  []string{"d1"},
			Domains:       []CustomDomain{{Hostname: "https://app.example.com"}},
			Routes:        []WorkerRoute{{Pattern: "example.com/*", ZoneID: "z", ZoneName: "example.com"}},
			MoreBindings: MoreBindings{
				RateLimits:    []RateLimitBinding{{Binding: "RL", NamespaceID: "x", Limit: 10, Period: 30}},
				OtherBindings: []GenericBinding{{Type: "d1", Binding: "DB2"}},
				Hyperdrives:   []HyperdriveBinding{{Binding: "GREETING"}},
			},
		}}
	args.Vars = map[string]string{"GREETING": "hi"}
	reasons := family.ProblemsByField(args.validate(func(string) bool { return false }))
	for _, field := range []string{"observability.headSamplingRate", "placement", "limits.cpuMs", "tags[0]", "keepBindings[0]",
		"domains[0].hostname", "domains[0].zoneId", "routes[0].zoneName", "rateLimits[0].namespaceId", "rateLimits[0].period",
		"otherBindings[0].type", "hyperdrives[0].id", "vars.GREETING"} {
		assert.Contains(t, reasons, field)
	}
	assert.Contains(t, reasons["vars.GREETING"], "hyperdrives[0].binding", "a clash names the other binding")
}
