//go:build !unix

package cpuclock

import "time"

func used() (time.Duration, bool) { return 0, false }
