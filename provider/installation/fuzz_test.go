package installation

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
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
		msg := planProblems(t, &args)
		if msg == "" {
			return
		}
		quoted := len(secretValue) >= 12 && !strings.Contains(strings.Join([]string{deployment, prefix, location, bucket,
			worker, varKey, secretKey, cronExpr, script}, "\x00"), secretValue)
		if quoted && strings.Contains(msg, secretValue) {
			t.Fatalf("the message quotes the secret value: %s", msg)
		}
	})
}

// FuzzUpstreamGates fuzzes the inputs upstream's plan-time gates read: which
// bots are on and which of their credentials are given, the allowlists, the
// sign-in providers and the token encryption key. Beyond never panicking and
// naming a field per problem, the access gate must refuse exactly the specs
// whose allowlists are all blank (read here with strings.FieldsFunc, not the
// component's own reader) and that do not set unsafeAllowAllUsers, and no
// message may quote a credential.
func FuzzUpstreamGates(f *testing.F) {
	f.Add(uint16(0), "octocat", "", "", "", "")
	f.Add(uint16(0b1111_1111_1111), " , ", ",,", "", "example.com", "short")
	f.Add(uint16(0b0000_0101_0110), "", "", "a@b.example", "", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	f.Add(uint16(0b1010_1010_1010), "\t", "org", "", " ", "not base64!")
	f.Add(uint16(0b0000_0000_0001), " ", ", ,", "", "\u00a0", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	f.Fuzz(func(t *testing.T, flags uint16, users, orgs, emails, domains, tokenKey string) {
		bit := func(i int) bool { return flags&(1<<i) != 0 }
		const credential = "credential-value-under-test"
		args := requiredArgs()
		args.TokenEncryptionKey = pulumi.String(tokenKey)
		slackOn := !bit(0)
		args.Slack = &SlackArgs{Enabled: &slackOn}
		if bit(1) {
			args.Slack.BotToken = pulumi.String(credential)
		}
		if bit(2) {
			args.Slack.SigningSecret = pulumi.String(credential)
		}
		ghOn, ghUser := bit(3), "bot[bot]"
		args.GithubBot = &GithubBotArgs{Enabled: &ghOn}
		if bit(4) {
			args.GithubBot.WebhookSecret = pulumi.String(credential)
			args.GithubBot.Username = &ghUser
		}
		linearOn, clientID := bit(5), "linear-client"
		args.LinearBot = &LinearBotArgs{Enabled: &linearOn}
		if bit(6) {
			args.LinearBot.ClientID = &clientID
			args.LinearBot.ClientSecret = pulumi.String(credential)
			args.LinearBot.WebhookSecret = pulumi.String(credential)
		}
		unsafeAll := bit(7)
		args.Access = &AccessArgs{AllowedUsers: &users, AllowedGithubOrgs: &orgs, AllowedEmails: &emails,
			AllowedEmailDomains: &domains, UnsafeAllowAllUsers: &unsafeAll}
		if !bit(8) {
			args.GithubOAuth = nil
		}
		if bit(9) {
			args.GoogleOAuth = &OAuthArgs{ClientID: "google-client", ClientSecret: pulumi.String(credential)}
		}
		msg := planProblems(t, &args)
		if msg != "" && (strings.Contains(msg, credential) || (len(tokenKey) >= 12 && strings.Contains(msg, tokenKey))) {
			t.Fatalf("the message quotes a credential: %s", msg)
		}
		blank := func(list string) bool {
			return len(strings.FieldsFunc(list, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })) == 0
		}
		noAllowlist := blank(users) && blank(orgs) && blank(emails) && blank(domains)
		if refused := strings.Contains(msg, "\n  access: "); refused != (noAllowlist && !unsafeAll) {
			t.Fatalf("access gate: refused=%v for users=%q orgs=%q emails=%q domains=%q unsafe=%v:\n%s",
				refused, users, orgs, emails, domains, unsafeAll, msg)
		}
		if slackOn && !(bit(1) && bit(2)) && !strings.Contains(msg, "slack.") {
			t.Fatalf("the Slack bot is on without its credentials and no slack field is named:\n%s", msg)
		}
		if !bit(8) && !bit(9) && !strings.Contains(msg, "githubOAuth: ") {
			t.Fatalf("no sign-in provider and githubOAuth is not named:\n%s", msg)
		}
	})
}

// FuzzInputRules fuzzes the inputs issue 34 found deployed as given or
// refused too late: the icon URL, the GitHub IDs, the e-mail domains, a
// sandbox backend's URL and names, a worker's var name and sampling rate.
// The stages never panic, every problem names a field, no message prints a
// Go value, and the backend's API key is never quoted.
func FuzzInputRules(f *testing.F) {
	f.Add("https://example.com/logo.png", "123", "example.com", "https://daytona.example/api", "snap", "us", "FINE", 0.5)
	f.Add("javascript:alert(1)", "my-app", "*", "http://daytona.example/api", "my snapshot", "us east!", "class", 2.0)
	f.Add("/logo.png", "1.5", " , @x", "http://127.0.0.1:1/api", strings.Repeat("s", 200), "", "default", -1.0)
	f.Add("data:,x", "", "a,b", "ftp://x", "a/b@sha256:"+strings.Repeat("a", 64), "eu", "", 1.0)
	const apiKey = "dtn_fuzz_api_key_never_quoted"
	f.Fuzz(func(t *testing.T, icon, appID, domains, apiURL, snapshot, target, varKey string, rate float64) {
		args := requiredArgs()
		args.AppIconURL = &icon
		args.GithubApp.AppID = appID
		args.Access = &AccessArgs{AllowedEmailDomains: &domains, AllowedUsers: new("octocat")}
		args.Sandbox = &SandboxArgs{Provider: new("daytona"), Manage: new(false),
			Daytona: &DaytonaArgs{APIURL: pulumi.String(apiURL), APIKey: pulumi.String(apiKey), BaseSnapshot: &snapshot, Target: &target}}
		args.Workers = []InstallationWorkerArgs{{Name: "slack-bot", Vars: map[string]string{varKey: "v"},
			Observability: &cloudflare.Observability{Enabled: true, HeadSamplingRate: &rate}}}
		msg := planProblems(t, &args)
		if msg == "" {
			return
		}
		for _, goValue := range []string{"<nil>", "map[", "&{", "%!"} {
			given := strings.Join([]string{icon, appID, domains, apiURL, snapshot, target, varKey}, "\x00")
			if strings.Contains(msg, goValue) && !strings.Contains(given, goValue) {
				t.Fatalf("the message prints a Go value (%s): %s", goValue, msg)
			}
		}
		if strings.Contains(msg, apiKey) {
			t.Fatalf("the message quotes the API key: %s", msg)
		}
	})
}

// planProblems plans args as the component does and returns the refusal's
// message ("" when it plans), failing the fuzz run when a problem line does
// not start with the field it is about.
func planProblems(t *testing.T, args *OpenInspectArgs) string {
	t.Helper()
	s := normalize(t.Context(), args)
	_, err := planInstallation(loadContract(t), s, nil, validateSecretValues(context.Background(), s)...)
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, line := range strings.Split(msg, "\n")[1:] {
		if field, _, ok := strings.Cut(strings.TrimSpace(line), ": "); !ok || field == "" {
			t.Fatalf("a problem without its field: %q", line)
		}
	}
	return msg
}
