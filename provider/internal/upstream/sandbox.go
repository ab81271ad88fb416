package upstream

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Sandbox describes the sandbox backends this provider deploys. Which backend
// an installation uses is the derived value sandboxProvider.
type Sandbox struct {
	Modal   Modal          `json:"modal"`
	Daytona Daytona        `json:"daytona"`
	Records SandboxRecords `json:"records"`
}

// ProviderEnv names the control-plane vars and secrets a backend contributes;
// each must exist on the control-plane worker.
type ProviderEnv struct {
	ControlPlaneVars    []string `json:"controlPlaneVars"`
	ControlPlaneSecrets []string `json:"controlPlaneSecrets"`
}

// NamedSource is a name with the source of its value.
type NamedSource struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
}

// Modal describes the Modal backend.
type Modal struct {
	ProviderEnv
	AppName            string         `json:"appName"`
	Package            string         `json:"package"`
	DeployEnv          []NamedSource  `json:"deployEnv"`
	DeploySteps        []string       `json:"deploySteps"`
	ModalClientVersion string         `json:"modalClientVersion"`
	Secrets            []ModalSecret  `json:"secrets"`
	SecretsNotes       string         `json:"secretsNotes"`
	Endpoints          ModalEndpoints `json:"endpoints"`
	Health             ModalHealth    `json:"health"`
	Auth               ModalAuth      `json:"auth"`
	ChangeDetection    []string       `json:"changeDetection"`
	Image              ModalImage     `json:"image"`
}

// ModalSecret is a named Modal secret and its keys.
type ModalSecret struct {
	Name string        `json:"name"`
	Keys []NamedSource `json:"keys"`
}

// ModalEndpoints describes how Modal endpoint URLs are formed.
type ModalEndpoints struct {
	URLPattern    string   `json:"urlPattern"`
	WorkspaceSlug string   `json:"workspaceSlug"`
	Functions     []string `json:"functions"`
}

// URL forms a Modal endpoint URL for a function.
func (e ModalEndpoints) URL(appName, workspace, webSuffix, function string) string {
	slug := workspace
	if webSuffix != "" {
		slug += "-" + webSuffix
	}
	return "https://" + slug + "--" + appName + "-" + function + ".modal.run"
}

// ModalHealth is the Modal health endpoint and its response.
type ModalHealth struct {
	Function string          `json:"function"`
	Method   string          `json:"method"`
	Body     json.RawMessage `json:"body"`
}

// ModalAuth describes how the control plane authenticates to Modal.
type ModalAuth struct {
	Header          string `json:"header"`
	Format          string `json:"format"`
	ValiditySeconds int    `json:"validitySeconds"`
}

// ModalImage records the Modal sandbox image's pins.
type ModalImage struct {
	Base           string `json:"base"`
	Node           string `json:"node"`
	Pnpm           string `json:"pnpm"`
	Bun            string `json:"bun"`
	OpencodeAI     string `json:"opencodeAi"`
	OpencodePlugin string `json:"opencodePlugin"`
	CodeServer     string `json:"codeServer"`
	AgentBrowser   string `json:"agentBrowser"`
	Ttyd           string `json:"ttyd"`
	RuntimeVersion string `json:"runtimeVersion"`
}

// SandboxRecords says where an installation's D1 database records what it
// created at its sandbox provider, which scopes teardown to its own.
type SandboxRecords struct {
	SessionsTable       string `json:"sessionsTable"`
	SessionIDColumn     string `json:"sessionIdColumn"`
	ImagesTable         string `json:"imagesTable"`
	ImageIDColumn       string `json:"imageIdColumn"`
	ImageProviderColumn string `json:"imageProviderColumn"`
	Notes               string `json:"notes"`
}

// Daytona describes the Daytona backend.
type Daytona struct {
	ProviderEnv
	Package       string           `json:"package"`
	APIKeyNeeds   string           `json:"apiKeyNeeds"`
	Snapshot      DaytonaSnapshot  `json:"snapshot"`
	Toolchain     DaytonaToolchain `json:"toolchain"`
	SandboxLabels SandboxLabels    `json:"sandboxLabels"`
}

// SandboxLabels are the labels the control plane puts on session sandboxes.
type SandboxLabels struct {
	Framework struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"framework"`
	Session string `json:"session"`
}

// DaytonaSnapshot describes the Daytona base snapshot.
type DaytonaSnapshot struct {
	Name            Source     `json:"name"`
	BaseImage       string     `json:"baseImage"`
	RuntimeSource   string     `json:"runtimeSource"`
	RuntimePath     string     `json:"runtimePath"`
	Workdir         string     `json:"workdir"`
	Entrypoint      []string   `json:"entrypoint"`
	SandboxVersion  string     `json:"sandboxVersion"`
	Rebuild         string     `json:"rebuild"`
	RebuildNotes    string     `json:"rebuildNotes"`
	BuilderSDK      PackagePin `json:"builderSdk"`
	ChangeDetection []string   `json:"changeDetection"`
}

// PackagePin is a package at a version.
type PackagePin struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// DaytonaToolchain records the tool versions baked into the Daytona snapshot.
type DaytonaToolchain struct {
	Python         string `json:"python"`
	Node           string `json:"node"`
	Pnpm           string `json:"pnpm"`
	Bun            string `json:"bun"`
	OpencodeAI     string `json:"opencodeAi"`
	OpencodePlugin string `json:"opencodePlugin"`
	CodeServer     string `json:"codeServer"`
	AgentBrowser   string `json:"agentBrowser"`
	GhCLI          string `json:"ghCli"`
}

func (v *validator) providerEnv(where string, pe ProviderEnv) {
	cp := v.c.Worker("control-plane")
	if cp == nil {
		return
	}
	for _, n := range pe.ControlPlaneVars {
		if cp.Var(n) == nil {
			v.add("%s: controlPlaneVars %q is not a var of worker %q", where, n, cp.Logical)
		}
	}
	for _, n := range pe.ControlPlaneSecrets {
		if cp.Secret(n) == nil {
			v.add("%s: controlPlaneSecrets %q is not a secret of worker %q", where, n, cp.Logical)
		}
	}
}

func (v *validator) sandbox() {
	s := v.c.Sandbox
	if d := v.c.DerivedValue("sandboxProvider"); d == nil {
		v.add("derived: sandboxProvider is missing")
	} else {
		if d.Default == nil || !slices.Contains(d.Allowed, *d.Default) {
			v.add("derived sandboxProvider: the default must be among allowed %v", d.Allowed)
		}
		for _, p := range d.Allowed {
			if _, ok := v.c.Conditions[p]; !ok {
				v.add("derived sandboxProvider: no condition named %q", p)
			}
		}
	}
	m := s.Modal
	v.providerEnv("sandbox.modal", m.ProviderEnv)
	v.providerEnv("sandbox.daytona", s.Daytona.ProviderEnv)
	if m.AppName == "" {
		v.add("sandbox.modal.appName is required")
	}
	for i, e := range m.DeployEnv {
		v.source(fmt.Sprintf("sandbox.modal.deployEnv[%d] %q", i, e.Name), e.Source)
	}
	seen := map[string]bool{}
	for i, sec := range m.Secrets {
		where := fmt.Sprintf("sandbox.modal.secrets[%d] %q", i, sec.Name)
		if sec.Name == "" || seen[sec.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[sec.Name] = true
		if len(sec.Keys) == 0 {
			v.add("%s: has no keys", where)
		}
		for j, k := range sec.Keys {
			v.source(fmt.Sprintf("%s: keys[%d] %q", where, j, k.Name), k.Source)
		}
	}
	if !slices.Contains(m.Endpoints.Functions, m.Health.Function) {
		v.add("sandbox.modal.health.function %q is not among endpoints.functions", m.Health.Function)
	}
	var body map[string]any
	if err := json.Unmarshal(m.Health.Body, &body); err != nil || len(body) == 0 {
		v.add("sandbox.modal.health.body must be a non-empty JSON object")
	}
	v.source("sandbox.daytona.snapshot.name", s.Daytona.Snapshot.Name)
	if s.Daytona.Snapshot.BaseImage == "" {
		v.add("sandbox.daytona.snapshot.baseImage is required")
	}
}
