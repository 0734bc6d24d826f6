// Package docs holds Maven's design, security requirements, peers and style as Markdown, and
// the test that keeps them honest: every file, function and test the rule index in README.md
// names exists, and every docs/….md#anchor cited anywhere in the repository resolves. It has
// no code; nothing imports it.
package docs
