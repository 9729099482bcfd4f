// Package objects builds the objects Muster creates for a job, as pure
// constructors: a task's pod (its template with Muster's labels, owner,
// hostname, environment, framework wiring, placeholders and debug command
// applied), the job's headless Service and the rendezvous store pod. The
// planner decides which to create; it never builds them itself.
package objects
