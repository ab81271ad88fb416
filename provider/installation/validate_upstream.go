package installation

import (
	"maps"
	"slices"
	"strings"
)

// Stage 2a: upstream's own plan-time refusals. Upstream's Terraform refuses
// these specs before it creates anything (variable validations and the
// access-control and sign-in gates of its production environment at the
// pinned commit), so the component refuses them at preview too: deploying
// them gives an installation nobody can sign in to, or a bot that cannot
// verify what it receives.

// upstreamGates applies upstream's plan-time rules to the spec.
func upstreamGates(s *spec) problems {
	var errs problems
	if s.SlackEnabled {
		x := s.Slack
		if x == nil {
			x = &SlackArgs{}
		}
		missing := missingFields("slack", map[string]bool{"botToken": x.BotToken == nil, "signingSecret": x.SigningSecret == nil})
		for _, f := range missing {
			errs.add(f, "required while the Slack bot is enabled (the default): give the Slack app's bot token and signing secret, "+
				"or set slack.enabled to false")
		}
	}
	if s.GithubBotEnabled {
		x := s.GithubBot // given: it enables the bot
		missing := missingFields("githubBot", map[string]bool{"webhookSecret": x.WebhookSecret == nil,
			"username": strings.TrimSpace(s.GithubBotUsername) == ""})
		for _, f := range missing {
			errs.add(f, "required while githubBot.enabled is true: give the webhook secret and the App's bot login (name[bot]), "+
				"or set githubBot.enabled to false")
		}
	}
	if s.LinearBotEnabled {
		x := s.LinearBot // given: it enables the bot
		missing := missingFields("linearBot", map[string]bool{"clientId": strings.TrimSpace(s.LinearBotClientID) == "",
			"clientSecret": x.ClientSecret == nil, "webhookSecret": x.WebhookSecret == nil})
		for _, f := range missing {
			errs.add(f, "required while linearBot.enabled is true: give the Linear OAuth application's client ID and secret "+
				"and its webhook secret, or set linearBot.enabled to false")
		}
	}
	a := admissionOf(s.Access)
	if !a.anyAllowlist() && !a.unsafeAllowAll {
		errs.add("access", "no allowlist admits anyone: set access.allowedUsers, allowedGithubOrgs, allowedEmails or "+
			"allowedEmailDomains (comma-separated, blank entries do not count), or set access.unsafeAllowAllUsers to true "+
			"to admit every authenticated user")
	}
	github, google := s.GithubOAuth != nil, s.GoogleOAuth != nil
	if !github && !google {
		errs.add("githubOAuth", "no sign-in provider: give githubOAuth or googleOAuth (client ID and secret), "+
			"or nobody can sign in to the web UI")
	}
	// Upstream's unsafe allow-all takes effect only while no allowlist is set;
	// GitHub logins and organisations cannot admit a Google identity.
	if google && a.anyAllowlist() && !a.providerNeutral {
		errs.add("googleOAuth", "Google sign-in admits no one: access.allowedUsers and allowedGithubOrgs match GitHub identities only "+
			"(and unsafeAllowAllUsers has no effect while an allowlist is set); add access.allowedEmails or allowedEmailDomains, "+
			"or remove googleOAuth")
	}
	return errs
}

// missingFields lists base.<field> for each missing field, in field order.
func missingFields(base string, missing map[string]bool) []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(missing)) {
		if missing[f] {
			out = append(out, base+"."+f)
		}
	}
	return out
}

// admission is what the access allowlists admit, as upstream reads them:
// comma-separated, each entry trimmed, blank entries ignored.
type admission struct {
	// providerNeutral: e-mail addresses or domains, which any sign-in
	// provider's verified e-mail matches.
	providerNeutral bool
	// githubOnly: GitHub logins or organisations.
	githubOnly     bool
	unsafeAllowAll bool
}

func (a admission) anyAllowlist() bool { return a.providerNeutral || a.githubOnly }

func admissionOf(x accessLists) admission {
	return admission{
		providerNeutral: listHasEntry(x.AllowedEmails) || listHasEntry(x.AllowedEmailDomains),
		githubOnly:      listHasEntry(x.AllowedUsers) || listHasEntry(x.AllowedGithubOrgs),
		unsafeAllowAll:  x.UnsafeAllowAllUsers,
	}
}

// listHasEntry reports whether a comma-separated list has a non-blank entry.
func listHasEntry(list string) bool {
	for _, item := range strings.Split(list, ",") {
		if strings.TrimSpace(item) != "" {
			return true
		}
	}
	return false
}
