//go:build !linux

package kube

import "os/exec"

func setProcAttr(*exec.Cmd) {}
