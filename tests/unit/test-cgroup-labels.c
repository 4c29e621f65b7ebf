// SPDX-License-Identifier: GPL-2.0-only
/* daemon/procfs.c's proc_cgroup_labels: the container and pod of the cgroup paths that
 * docker, containerd, CRI-O, podman and Kubernetes' two cgroup drivers make, and nothing
 * from a path that names neither. The metrics label processes with them. */
#include <string.h>

#include "check.h"
#include "procfs.h"

#define ID "4e1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e9f"
#define POD "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
#define POD_ "1f2e3d4c_5b6a_4978_8a9b_0c1d2e3f4a5b"

static void labels(const char *path, const char *container, const char *pod)
{
	struct proc_labels l;

	memset(&l, 'x', sizeof(l));
	proc_cgroup_labels(path, &l);
	CHECKF(!strcmp(l.container, container) && !strcmp(l.pod, pod),
	       "%s: container '%s' pod '%s', want '%s' '%s'", path, l.container, l.pod, container, pod);
}

int main(void)
{
	labels("/system.slice/docker-" ID ".scope", "4e1b2c3d4e5f", "");
	labels("/docker/" ID, "4e1b2c3d4e5f", "");
	labels("/machine.slice/libpod-" ID ".scope/container", "4e1b2c3d4e5f", "");
	labels("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_
	       ".slice/cri-containerd-" ID ".scope",
	       "4e1b2c3d4e5f", POD);
	labels("/kubepods/besteffort/pod" POD "/" ID, "4e1b2c3d4e5f", POD);
	labels("/kubepods.slice/kubepods-pod" POD_ ".slice/crio-" ID ".scope", "4e1b2c3d4e5f", POD);
	labels("/user.slice/user-1000.slice/session-3.scope", "", "");
	labels("/", "", "");
	labels("", "", "");
	labels("/docker/"
	       "4e1b2c3d",
	       "", ""); /* too short for an id */
	labels("/docker/" ID "zz", "", ""); /* not hex */
	labels("/kubepods/pod"
	       "1f2e3d4c-5b6a",
	       "", ""); /* too short for a pod uid */
	labels("/x/ipod" POD "/y", "", ""); /* "pod" inside a word */
	return check_summary();
}
