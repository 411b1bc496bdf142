// The Store a registry keeps its units in.

package actions
