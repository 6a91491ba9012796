package dashboard

// NewWithMaxListLimit is New with n the largest page of a list.
func NewWithMaxListLimit(cfg Config, n int) (*Dashboard, error) { return newDashboard(cfg, n) }
