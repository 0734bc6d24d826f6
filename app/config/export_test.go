package config

import "os"

// Parse is ParseEnv reading ${VAR} from the process's environment, for the tests.
func Parse(data []byte) (Config, error) { return ParseEnv(data, os.Getenv) }
