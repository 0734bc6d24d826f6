package db

import (
	"context"
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"
)

// newDriver is a driver of one Open's own: its connections have contains_folded, and no
// other database's connections do.
func newDriver() (*sqlite.Driver, error) {
	drv := &sqlite.Driver{}
	if err := drv.RegisterDeterministicScalarFunction(containsFolded, -1, containsFoldedSQL); err != nil {
		return nil, fmt.Errorf("register %s: %w", containsFolded, err)
	}
	return drv, nil
}

// connector opens connections of drv to dsn for database/sql.
type connector struct {
	drv *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }
