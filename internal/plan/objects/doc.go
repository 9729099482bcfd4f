// Package objects builds the objects Muster creates for a job, as pure
// constructors: a task's pod (its template with Muster's labels, owner,
// hostname, environment, framework wiring, placeholders and debug command
// applied), the job's headless Service, the rendezvous store pod, and the
// objects a runtime needs beside them (hosts files, an MPI hostfile and SSH
// Secret, a pod reader's ServiceAccount and Role). Each runtime's wiring is
// a file of its own returning a wiring value. The planner decides which
// pods to create; it never builds them itself.
package objects
