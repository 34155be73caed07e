package report

// AddReason is addReason, for the external tests.
var AddReason = addReason
