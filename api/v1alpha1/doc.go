// +k8s:conversion-gen=github.com/muster-dev/muster/api/v1beta1

package v1alpha1
