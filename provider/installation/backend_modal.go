package installation

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
)

// modalBackend is the modal sandbox provider (upstream's default): a
// ModalApp child deploys upstream's Modal app with its named secrets.
type modalBackend struct{}

// existingImage is "": the Modal app is always deployed when managed.
func (modalBackend) existingImage(*spec) string { return "" }

func (modalBackend) validate(s *spec) problems {
	var errs problems
	// The provider's modalEnvironment, used when sandbox.modal.environment
	// is unset, is held to the same rule when the provider is configured
	// (config.Configure), before this runs.
	if s.Sandbox == nil || s.Sandbox.Modal == nil {
		return errs
	}
	// The environment as given: set empty, it is refused (Modal has no
	// environment without a name), while absent it is the default.
	if env := s.Sandbox.Modal.Environment; env != nil {
		if err := modalapi.CheckEnvironmentName(*env); err != nil {
			errs.add("sandbox.modal.environment", "%v", err)
		}
	}
	if sfx := s.Modal.EnvironmentWebSuffix; sfx != nil && !webSuffixPattern.MatchString(*sfx) {
		errs.add("sandbox.modal.environmentWebSuffix", "%q: use lower-case letters, digits and '-'", *sfx)
	}
	if s.managesModal() {
		// The deployed app reports both; a given value could only disagree.
		if s.Modal.Workspace != nil {
			errs.add("sandbox.modal.workspace", "the managed Modal app reports its workspace; remove it, or set sandbox.manage to false")
		}
		if s.Modal.EnvironmentWebSuffix != nil {
			errs.add("sandbox.modal.environmentWebSuffix", "the managed Modal app reports its web suffix; remove it, or set sandbox.manage to false")
		}
	}
	return errs
}

// managesModal: a ModalApp child deploys the installation's Modal app.
func (s *spec) managesModal() bool { return s.ManageSandbox && s.SandboxProvider == "modal" }

func (modalBackend) plan(pl *planner, s *spec) error {
	c, plan := pl.contract, pl.plan
	cp := plan.worker(controlPlane)
	m := c.Sandbox.Modal
	plan.Modal = &plannedModal{Environment: s.Modal.Environment}
	apiSecret := valueRef{kind: refGenerated, text: modalAPISecret.Name}
	if _, given := plan.SecretInputs["modalApiSecret"]; given {
		apiSecret = valueRef{kind: refSecretInput, text: "modalApiSecret"}
	} else {
		pl.generated[modalAPISecret.Name] = true
	}
	for _, secret := range m.Secrets {
		keys := map[string]valueRef{}
		for _, k := range secret.Keys {
			ref, err := pl.ref(k.Source, controlPlane)
			if err != nil {
				return fmt.Errorf("contract modal secret %s.%s: %w", secret.Name, k.Name, err)
			}
			if k.Source.Input == "modalApiSecret" {
				ref = apiSecret
			}
			keys[k.Name] = ref
		}
		plan.Modal.Secrets = append(plan.Modal.Secrets, plannedModalSecret{Name: secret.Name, Keys: keys})
	}
	outputs := map[string]string{
		"MODAL_WORKSPACE": sandboxWorkspace, "MODAL_ENVIRONMENT": sandboxEnvironment,
		"MODAL_ENVIRONMENT_WEB_SUFFIX": sandboxWebSuffix,
	}
	for _, name := range m.ControlPlaneVars {
		out, ok := outputs[name]
		if !ok {
			return fmt.Errorf("contract: control-plane var %s of the modal provider has no ModalApp output", name)
		}
		pl.explicitVar(s, name, out)
	}
	for _, name := range m.ControlPlaneSecrets {
		if _, explicit := s.explicitValue(controlPlane, name); !explicit {
			cp.Secrets[name] = apiSecret
		}
	}
	return nil
}

func (modalBackend) planned(plan *installPlan) bool { return plan.Modal != nil }

func (modalBackend) sources(c *upstream.Contract) []string {
	return []string{c.Sandbox.Modal.Package + "/deploy.py", c.Sandbox.Modal.Package + "/uv.lock"}
}

// preflight is nil: the lock checks the Modal token and environment
// through its modal part, when the installation deploys the Modal app.
func (modalBackend) preflight(*installer) pulumi.Map { return nil }

func (modalBackend) register(b *installer, r sandboxRegistration) (*sandboxChild, error) {
	plan := b.plan
	cp := plan.worker(controlPlane)
	secrets := pulumi.Array{}
	for _, secret := range plan.Modal.Secrets {
		values := pulumi.StringMap{}
		for k, ref := range secret.Keys {
			values[k] = b.value(cp, ref)
		}
		secrets = append(secrets, pulumi.Map{"name": pulumi.String(secret.Name), "values": pulumi.ToSecret(values)})
	}
	// Owned: the environment records the installation before the
	// deploy, so a killed run's app is adopted by the recovery.
	props := b.owned(pulumi.Map{
		"source":        pulumi.String(plan.SandboxSource),
		"secrets":       secrets,
		"d1DatabaseId":  r.db.DatabaseID,
		"adoptExisting": r.adopt,
		"keepOnDelete":  pulumi.Bool(r.orphan),
	})
	if plan.Modal.Environment != "" {
		props["environment"] = pulumi.String(plan.Modal.Environment)
	}
	app := &modalAppChild{}
	b.modal = app
	// The outputs exist once the child is registered.
	err := b.ctx.RegisterResource(sandbox.ModalAppToken, b.child("modal-app"), props, app, r.opts...)
	return &sandboxChild{
		outputs: map[string]pulumi.StringOutput{
			sandboxWorkspace: app.Workspace, sandboxEnvironment: app.DeployedEnvironment, sandboxWebSuffix: app.WebSuffix},
		status: func() pulumi.StringOutput {
			return pulumi.Sprintf("modal: app %s in environment %s of workspace %s; api_health %s",
				app.AppID, app.DeployedEnvironment, app.Workspace, app.Health)
		},
	}, err
}

// modalAppChild is the ModalApp child's outputs the component reads.
type modalAppChild struct {
	pulumi.CustomResourceState
	Workspace           pulumi.StringOutput `pulumi:"workspace"`
	DeployedEnvironment pulumi.StringOutput `pulumi:"deployedEnvironment"`
	WebSuffix           pulumi.StringOutput `pulumi:"webSuffix"`
	AppID               pulumi.StringOutput `pulumi:"appId"`
	HealthURL           pulumi.StringOutput `pulumi:"healthUrl"`
	Health              pulumi.StringOutput `pulumi:"health"`
}
