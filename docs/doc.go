// Package docs holds Maven's design, security requirements, peers and style as Markdown, and
// the tests that keep them honest: every file, function and test the rule index in README.md
// names exists, every docs/….md#anchor cited anywhere in the repository resolves, the layouts
// of design.md and the top README.md name every package, and no file or function outgrows
// style.md#sizes. It has no code; nothing imports it.
package docs
