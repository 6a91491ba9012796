package idempotencyotel

// ModuleVersion is moduleVersion, for the tests.
var ModuleVersion = moduleVersion

// NewAtVersion is New with its instrumentation scope at version: a test
// binary's build information has no version of the library's module.
func NewAtVersion(version string) func(Config) (*Telemetry, error) {
	return func(cfg Config) (*Telemetry, error) { return newTelemetry(cfg, version) }
}
