// Package bound describes a result cut to its bound: the form
// ([Bounded]) in which the registry of package
// github.com/actionreg/actions answers a call whose result is larger than
// its limit, with what was cut ([Bound]) and the call that gets the rest
// ([NextCall]). A caller reads it from a Result's Value or StepResults; a
// body never builds one.
package bound
