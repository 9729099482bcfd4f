// Package plan holds every decision the operator makes, as pure functions of
// (job, observed pods, clock). Nothing here talks to the API server: the
// controller observes, calls Plan, writes the status it returns, and only
// then carries out the actions it returns. Writing first is what makes each
// decision survive an operator crash: a restart is counted in status before
// the failed pod is deleted, so it is neither lost nor counted twice.
package plan
