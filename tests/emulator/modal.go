package emulator

// The Modal family lives in tests/emulator/modal; these names keep the root
// package's API, so importers need not change.

import (
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
)

// Modal defaults and the fixed answers of the emulated Modal (see package
// modal).
const (
	DefaultModalTokenID      = modal.DefaultTokenID
	DefaultModalTokenSecret  = modal.DefaultTokenSecret
	DefaultModalWorkspace    = modal.DefaultWorkspace
	DefaultModalEnvironment  = modal.DefaultEnvironment
	ModalImageBuilderVersion = modal.ImageBuilderVersion
	ModalHealthBody          = modal.HealthBody
)

// FaultImageBuildFailure makes the next image build(s) requested with
// ImageGetOrCreate fail (modal.FaultImageBuildFailure).
const FaultImageBuildFailure = modal.FaultImageBuildFailure

// The Modal token, image and inventory types.
type (
	ModalToken        = modal.Token
	ModalImageEntry   = modal.ImageEntry
	ModalInventory    = modal.Inventory
	ModalAppEntry     = modal.AppEntry
	ModalSecretEntry  = modal.SecretEntry
	ModalSandboxEntry = modal.SandboxEntry
)

// ModalCalls is the number of Modal API (gRPC) calls received, answered or
// not; the Modal counterpart of CloudflareCalls.
func (s *Server) ModalCalls() int { return s.modal.Calls() }

// ModalImages lists the Modal images that exist (modal.Service.Images).
func (s *Server) ModalImages() []ModalImageEntry { return s.modal.Images() }

// CreateModalSandbox starts a sandbox in an app directly
// (modal.Service.CreateSandbox).
func (s *Server) CreateModalSandbox(workspace, environment, appName string, tags map[string]string) (string, error) {
	return s.modal.CreateSandbox(workspace, environment, appName, tags)
}

// ModalSecretValues returns a secret's values (modal.Service.SecretValues).
func (s *Server) ModalSecretValues(workspace, environment, name string) (map[string]string, bool) {
	return s.modal.SecretValues(workspace, environment, name)
}
