package installation

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// FuzzValidation runs the component's stages before registration on specs
// whose names, keys, paths and secret values are fuzzed: they never panic,
// every problem names a field, and a secret value is never quoted.
func FuzzValidation(f *testing.F) {
	f.Add("t1", "open-inspect", "ENAM", "", "control-plane", "EXTRA", "TOKEN", "0 * * * *", "", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	f.Add("", "-x", "mars", "UPPER", "Bad", "DB", "bad-key", "* * *", "../../../etc/passwd", "not base64!")
	f.Add(strings.Repeat("x", 70), "a", "", "ab", "extra", "1X", "K", "", "/etc/passwd", "   ")
	f.Add("x-y", "open-inspect-x", "wnam", "my-bucket", "slack-bot", "K", "K", "@daily", "does/not/exist.js", "")
	f.Fuzz(func(t *testing.T, deployment, prefix, location, bucket, worker, varKey, secretKey, cronExpr, script, secretValue string) {
		args := requiredArgs()
		args.DeploymentName, args.NamePrefix = deployment, &prefix
		args.Media = &MediaArgs{Location: &location, BucketName: &bucket}
		args.RepoSecretsEncryptionKey = pulumi.String(secretValue)
		entry := InstallationWorkerArgs{Name: worker, Vars: map[string]string{varKey: "v"},
			Secrets: map[string]pulumi.StringInput{secretKey: pulumi.String(secretValue)}, Crons: []string{cronExpr}}
		if script != "" {
			entry.Script = &script
		}
		args.Workers = []InstallationWorkerArgs{entry}
		s := normalize(&args)
		_, err := planInstallation(loadContract(t), s, nil, validateSecretValues(context.Background(), s)...)
		if err == nil {
			return
		}
		msg := err.Error()
		for _, line := range strings.Split(msg, "\n")[1:] {
			if field, _, ok := strings.Cut(strings.TrimSpace(line), ": "); !ok || field == "" {
				t.Fatalf("a problem without its field: %q", line)
			}
		}
		quoted := len(secretValue) >= 12 && !strings.Contains(strings.Join([]string{deployment, prefix, location, bucket,
			worker, varKey, secretKey, cronExpr, script}, "\x00"), secretValue)
		if quoted && strings.Contains(msg, secretValue) {
			t.Fatalf("the message quotes the secret value: %s", msg)
		}
	})
}
