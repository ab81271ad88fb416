package logredact

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capture keeps the final message of every record it is handed.
type capture struct{ messages *[]string }

func (c capture) Enabled(context.Context, slog.Level) bool { return true }
func (c capture) Handle(_ context.Context, r slog.Record) error {
	*c.messages = append(*c.messages, r.Message)
	return nil
}
func (c capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c capture) WithGroup(string) slog.Handler      { return c }

// TestRequestSecretsNeverFormatted: a secret map's entries, a secret's inner
// value and a secret output value, registered from a marshaled request, are
// masked in a record formatted the way Pulumi's RPC layer logs properties;
// plain values stay readable.
func TestRequestSecretsNeverFormatted(t *testing.T) {
	props := resource.PropertyMap{
		"secrets": resource.MakeSecret(resource.NewProperty(resource.PropertyMap{
			"API_KEY": resource.NewProperty("map-entry-canary-1"),
		})),
		"token": resource.MakeSecret(resource.NewProperty("plain-secret-canary-2")),
		"pepper": resource.NewProperty(resource.Output{
			Element: resource.NewProperty("output-secret-canary-3"), Known: true, Secret: true,
		}),
		"name": resource.NewProperty("worker-name-is-public"),
	}
	request, err := plugin.MarshalProperties(props, plugin.MarshalOptions{KeepSecrets: true, KeepOutputValues: true})
	require.NoError(t, err)
	// Level 9 only now: MarshalProperties logs every property it marshals at
	// that level, before Register, so the canaries would be written in
	// plaintext to glog's file; that file goes to the test's own directory
	// (Pulumi's logging names it in os.TempDir, which reads TMPDIR).
	t.Setenv("TMPDIR", t.TempDir())
	logging.InitLogging(false, 9, false)
	t.Cleanup(func() { logging.InitLogging(false, 0, false) })
	Register(request)

	var messages []string
	handler := formatFirst{inner: capture{&messages}}
	for _, arg := range []any{
		resource.NewProperty("map-entry-canary-1"),
		resource.NewProperty("plain-secret-canary-2"),
		resource.NewProperty("output-secret-canary-3"),
		resource.NewProperty("worker-name-is-public"),
	} {
		record := slog.NewRecord(time.Now(), slog.LevelInfo, "Unmarshaling property for RPC[]: value=%v", 0)
		record.AddAttrs(slog.Any(argPrefix+"0", arg))
		require.NoError(t, handler.Handle(t.Context(), record))
	}
	assert.Equal(t, []string{
		"Unmarshaling property for RPC[]: value={[secret]}",
		"Unmarshaling property for RPC[]: value={[secret]}",
		"Unmarshaling property for RPC[]: value={[secret]}",
		"Unmarshaling property for RPC[]: value={worker-name-is-public}",
	}, messages)
}
