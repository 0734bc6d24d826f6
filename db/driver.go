package db

import (
	"context"
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"
)

// Option changes what Open's connections do.
type Option func(*options)

type options struct {
	onCommit func()
}

// OnCommit has fn called as each write transaction commits, on the committing goroutine: it
// must not block, and must not touch the database.
func OnCommit(fn func()) Option {
	return func(o *options) { o.onCommit = fn }
}

// newDriver is a driver of one Open's own: its connections have contains_folded, has_words and the
// options' hooks, and no other database's connections do.
func newDriver(opts []Option) (*sqlite.Driver, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	drv := &sqlite.Driver{}
	for name, fn := range map[string]func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error){
		containsFolded: containsFoldedSQL, hasWords: hasWordsSQL,
	} {
		if err := drv.RegisterDeterministicScalarFunction(name, -1, fn); err != nil {
			return nil, fmt.Errorf("register %s: %w", name, err)
		}
	}
	if o.onCommit != nil {
		drv.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, _ string) error {
			hooks, ok := conn.(sqlite.HookRegisterer)
			if !ok {
				return fmt.Errorf("the sqlite driver's connection %T takes no commit hook", conn)
			}
			hooks.RegisterCommitHook(func() int32 {
				o.onCommit()
				return 0 // let the commit go on
			})
			return nil
		})
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
