package modalapi

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NotFound reports whether err is Modal's "no such object" (an environment
// the workspace lacks, for the installation's preflight).
func NotFound(err error) bool { return notFound(err) }

// InvalidArgument reports whether Modal refused a request's value (an
// environment name it does not accept).
func InvalidArgument(err error) bool { return status.Code(err) == codes.InvalidArgument }
