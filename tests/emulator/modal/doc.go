// Package modal is the Modal family of the emulator: Modal's control-plane
// API (gRPC, service modal.client.ModalClient, the server stubs modal-go
// v0.7.0 ships) on the same listener and URL as the Cloudflare API, so that
// one MODAL_SERVER_URL=<emulator URL> serves both modal-go and the `modal`
// Python CLI, plus the web endpoints of deployed apps under /__modal/web/
// and test controls under /__emulator/modal/.
//
// Both clients treat an http:// server URL as plaintext HTTP/2 with prior
// knowledge (h2c); the emulator's listener enables that (Protocols) and
// requests whose path is /modal.client.ModalClient/<Method> reach the gRPC
// server through the ordinary mux, so counting, faults and the request log
// work as for every other route.
//
// It is checked against real clients: modal-go and raw gRPC in
// tests/emulator/modal_test.go, the provider's clients in
// provider/internal/sandbox/modalapi and provider/internal/sandbox/modaldeploy, and the real
// `modal` CLI deploying the Open-Inspect app (the ModalApp resource tests in
// provider/sandbox and the engine tests).
//
// Files:
//   - modal.go: options, state, persistence, the HTTP entry point (counting,
//     faults), authentication;
//   - api.go: workspaces, environments, apps, functions, mounts;
//   - objects.go: secrets, images, sandboxes;
//   - web.go: the deployed web endpoints, the admin helpers and the
//     inventory;
//   - runner.go, runner.py: a deployed app's web endpoints answered by its
//     own functions, run from the source the deploy uploaded in a local
//     Python process whose Modal client is pointed at this emulator (with
//     Options.Python).
//
// What is not emulated: containers. Image builds run no Dockerfile (they
// pass through the build states and finish at once unless a fault fails
// them), and web endpoints' functions run on this machine, not in their
// image. Sandboxes run nothing (they live until terminated) unless
// Options.Sandboxes names bubblewrap and slirp4netns: then a sandbox's
// command runs as a process tree in its own namespaces on the host's /usr
// (sandboxrun.go), with exit codes, logs, terminate and timeouts.
//
// It keeps its own state file (modal.json) with its own lock and imports
// only core (plus gRPC and modal-go's protocol stubs): counting and faults go
// through core.Core, the state file is a core.StateFile, and the one thing it
// needs from the composition root is Options.BaseURL, where the emulator is
// reached. The root package (tests/emulator) keeps the Modal names of its API
// (ModalToken, DefaultModalTokenID, ModalCalls, ModalImages...) as forwarders.
package modal
