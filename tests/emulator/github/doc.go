// Package github is the emulator's GitHub stand-in: the slice of GitHub an
// Open-Inspect control plane calls to sign a person in, admit them and list
// the repositories its GitHub App may use. It owns github.json (the OAuth
// apps with their client secrets hashed, the local users, the GitHub Apps
// with their public keys, installations and repositories, and the codes and
// tokens it issued, hashed) and the stand-in's browser origin, an https
// loopback listener (browser.go).
//
//   - The OAuth web flow (oauth.go): GET /login/oauth/authorize renders a
//     page on which a person signs in as one of the configured local users
//     (their login, id, name, emails and org memberships are the
//     configuration); its form's POST issues a code and redirects to the
//     app's callback with the state it was given. The callback is checked
//     as GitHub checks it (host and port equal to the registered callback's,
//     path below its path; a loopback callback takes any port), and PKCE is
//     GitHub's: S256 only, optional, and a code issued with a challenge is
//     exchanged only with its verifier. POST /login/oauth/access_token
//     exchanges a code, once, within ten minutes, answering JSON or a form
//     as the Accept header asks and GitHub's error forms (HTTP 200 with
//     error, error_description, error_uri).
//   - The REST routes (api.go): /user, /user/emails,
//     /user/memberships/orgs/{org} for a user token;
//     /app/installations/{id}/access_tokens for a JWT (jwt.go) signed with
//     the private key whose public half the app was configured with;
//     /installation/repositories, /repos/{owner}/{repo} and
//     /repos/{owner}/{repo}/branches for an installation token; GitHub's
//     shapes, pagination (per_page, page, Link) and error bodies
//     ({message, documentation_url, status}).
//   - git (git.go): each configured repository is a real bare repository
//     under <data-dir>/github-git, seeded deterministically on first use
//     and served over git's smart HTTP protocol by git http-backend (a CGI)
//     once the credential is checked as GitHub checks it.
//   - Pull requests (pulls.go): POST/GET /repos/{owner}/{repo}/pulls[/{n}
//     [/commits]], recorded with their head, base and commits from git.
//
// The web routes are served under Prefix on the emulator's address and at
// the root of the browser origin; the REST routes under APIPrefix. The
// outbound gateway (package outbound, wired by the root) sends a script's
// requests for https://github.com/... and https://api.github.com/... here.
// Every route is counted and takes faults through core. No secret (a client
// secret, a code, a token, a verifier) is ever logged or stored in the
// clear: the state file holds their SHA-256 digests.
//
// It imports core and the standard library only, and runs the git binary.
package github
