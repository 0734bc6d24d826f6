package handlers

import (
	"maven/app/config"
	"maven/views"
)

// ConfigProblems is what /tools shows of the config's problems (*config.Problems).
type ConfigProblems interface {
	List() []config.Problem
	// Refused returns the config the last reload refused, and false if it applied its own.
	Refused() (config.Refusal, bool)
}

// configNotes is what /tools says about the config: the errors of a reload that refused it,
// and the problems of the config that runs. Nil when there is nothing to say.
func (s *server) configNotes() *views.ConfigNotes {
	path, _ := s.configSource()
	notes := &views.ConfigNotes{Path: path, Problems: configProblems(s.configProblems.List())}
	if r, ok := s.configProblems.Refused(); ok {
		notes.Path = r.File
		notes.Refused = &views.ConfigRefusal{At: timeOf(r.At), Errors: configProblems(r.Errors)}
	}
	if notes.Refused == nil && len(notes.Problems) == 0 {
		return nil
	}
	return notes
}

// configProblems are problems as the page shows them: keys and messages with their hidden
// characters spelled out, since both may quote the file (docs/design.md#rule-25).
func configProblems(list []config.Problem) []views.ConfigProblem {
	out := make([]views.ConfigProblem, len(list))
	for i, p := range list {
		out[i] = views.ConfigProblem{Key: text(p.Key), Message: text(p.Msg), Error: p.Level == config.LevelError}
	}
	return out
}
