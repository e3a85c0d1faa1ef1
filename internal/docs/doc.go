// Package docs checks the repository's documentation: every page under
// docs/ is reachable from README.md by links, and every relative link
// resolves.
package docs
