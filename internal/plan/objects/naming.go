package objects

import (
	"strconv"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// PodName is the name, and hostname, of task index of role in job.
func PodName(job, role string, index int32) string {
	return job + "-" + role + "-" + strconv.Itoa(int(index))
}

// ServiceName is the name of the job's headless Service, which is also the
// subdomain of every pod of the job.
func ServiceName(job *musterv1.TrainingJob) string { return job.Name }

// PodDNSName is the name a task's pod resolves by from any pod of the job's
// namespace.
func PodDNSName(job *musterv1.TrainingJob, role string, index int32) string {
	return PodName(job.Name, role, index) + "." + ServiceName(job)
}
