package github

// What the stand-in answers when something is wrong, and where each form
// comes from. "documented" means GitHub's documentation shows it; "observed"
// means it is quoted from real responses in public bug reports; "assumed"
// means a plausible answer of the same family, not seen.
//
//	route                                   answer                                                         source
//	GET  /login/oauth/authorize             unknown client_id: 404 page                                    observed (GitHub's 404 page)
//	                                        redirect_uri outside the callback: 302 to the registered
//	                                        callback, error=redirect_uri_mismatch, error_description,
//	                                        error_uri, state                                               documented (authorization request errors)
//	                                        code_challenge_method other than S256, or a malformed
//	                                        challenge: 302 to the redirect with error=invalid_request      assumed (GitHub accepts only S256: documented)
//	POST /login/oauth/authorize             Cancel: 302 with error=access_denied, "The user has denied
//	                                        your application access."                                      documented
//	POST /login/oauth/access_token          HTTP 200 with {error, error_description, error_uri}; JSON
//	                                        when Accept asks for it, else form-encoded                    documented (token request errors); 200 observed
//	                                        (better-auth and x/oauth2 both read errors from a 200)
//	                                        incorrect_client_credentials: unknown client or wrong secret   documented
//	                                        bad_verification_code: unknown, spent or expired code          documented
//	                                        redirect_uri_mismatch: not the redirect_uri the code was
//	                                        issued for                                                     documented
//	                                        bad_verification_code: a code issued with a challenge, and
//	                                        no or a wrong code_verifier                                    assumed (GitHub names no PKCE error)
//	any REST route                          {message, documentation_url, status (a string)}               observed
//	                                        no Authorization: 401 "Requires authentication"                observed
//	                                        unknown or expired token: 401 "Bad credentials"                observed
//	GET  /user, /user/emails, memberships   an installation token: 403 "Resource not accessible by
//	                                        integration"                                                   observed
//	GET  /user/memberships/orgs/{org}       not a member: 404 "Not Found"                                  documented
//	POST /app/installations/{id}/access_tokens
//	                                        a JWT that is not RS256, not signed by the app's key, names
//	                                        no app, or an app without a key: 401 "A JSON web token could
//	                                        not be decoded"                                                observed (bad signature); the rest assumed
//	                                        exp past: 401 "'Expiration time' claim ('exp') must be a
//	                                        numeric value representing the future time at which the
//	                                        assertion expires"                                             observed
//	                                        exp more than ten minutes ahead: 401 "'Expiration time' claim
//	                                        ('exp') is too far in the future"                              observed
//	                                        iat in the future: 401 "'Issued at' claim ('iat') must be an
//	                                        Integer representing the time that the assertion was issued"   observed
//	                                        another app's or no such installation: 404 "Not Found"         documented
//	GET  /installation/repositories         a user token: 403 "You must authenticate with an installation
//	                                        access token in order to list repositories for an
//	                                        installation."                                                 assumed
//	GET  /repos/{o}/{r}[/branches]          not visible to the token: 404 "Not Found"                      documented
//	git smart HTTP (info/refs, git-*-pack)  no credential on a private repository or a push: 401 with
//	                                        WWW-Authenticate Basic                                         observed (git's credential prompt)
//	                                        unknown token: 401 "Invalid username or token. Password
//	                                        authentication is not supported for Git operations."           observed
//	                                        repository the token cannot see: 404 "Repository not found."   observed
//	                                        push by a user outside the organization: 403 "Permission to
//	                                        o/r.git denied to <login>."                                    observed
//	                                        info/refs without ?service= (dumb HTTP): 403                   assumed
//	POST /repos/{o}/{r}/pulls               422 "Validation Failed", errors [{resource: PullRequest,
//	                                        field, code: missing_field|invalid}]                            documented
//	                                        same head open: errors [{code: custom, message: "A pull
//	                                        request already exists for o:branch."}]                        observed
//	                                        nothing to merge: "No commits between base and head"           observed
//	GET  /repos/{o}/{r}/pulls/{n}           no such number: 404 "Not Found"                                 documented
//	rate limit (a fault)                    REST: 403 "API rate limit exceeded"; pages: 429               documented (REST), assumed (pages)
