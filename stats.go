package mrc

import "github.com/openmrc/mrc/verbs"

// dropNone is placement's "no reason to drop".
const dropNone = verbs.NumDropReasons
