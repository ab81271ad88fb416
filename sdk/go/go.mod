module github.com/openinspect/pulumi-openinspect/sdk/go

go 1.26.6

require (
	github.com/blang/semver v3.5.1+incompatible
	github.com/pulumi/pulumi/sdk/v3 v3.276.0
)
