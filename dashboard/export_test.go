package dashboard

// SetMaxListLimit sets the largest page of a list of the dashboard New
// makes of cfg.
func SetMaxListLimit(cfg *Config, n int) { cfg.maxListLimit = n }
