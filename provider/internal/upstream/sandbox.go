package upstream

import (
	"encoding/json"
	"fmt"
	"slices"
)

// URL forms a Modal endpoint URL for a function.
func (e ModalEndpoints) URL(appName, workspace, webSuffix, function string) string {
	slug := workspace
	if webSuffix != "" {
		slug += "-" + webSuffix
	}
	return "https://" + slug + "--" + appName + "-" + function + ".modal.run"
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
