// SPDX-License-Identifier: GPL-2.0-only
/* SIGHUP: read the config again; flags still win. What needs a restart says so. */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "macro.h"
#include "snapstore.h"
#include "trigger.h"

int daemon_reload(struct daemon *d)
{
	struct settings s;
	int r;

	r = settings_load(d->argc, d->argv, &s);
	if (r != 0) {
		log_error("Reload failed: the configuration above has errors; keeping the running one");
		return r < 0 ? r : -EINVAL;
	}
	if (strcmp(s.socket, d->settings.socket) || s.ring_kb != d->settings.ring_kb ||
	    s.force_raw_tp != d->settings.force_raw_tp || s.force_task_hash != d->settings.force_task_hash)
		log_warning("socket, ring_kb, force_raw_tp and force_task_hash change only with a restart, ignoring");
	free(s.socket);
	s.socket = TAKE_PTR(d->settings.socket);
	s.ring_kb = d->settings.ring_kb;
	s.force_raw_tp = d->settings.force_raw_tp;
	s.force_task_hash = d->settings.force_task_hash;
	settings_free(&d->settings);
	d->settings = s;
	r = triggers_configure(d->triggers, d->settings.triggers, d->settings.n_triggers, d->settings.snapshot_formats);
	if (r < 0)
		log_error_errno(r, "Failed to set up the triggers: %m; keeping the old ones");
	r = snapstore_reconfigure(d->snapstore, d->settings.snapshot_dir, d->settings.max_snapshots,
				  d->settings.max_snapshot_mb << 20);
	if (r >= 0)
		r = snapstore_ready(d->snapstore);
	if (r < 0)
		daemon_log_snapdir_error(r, d->settings.snapshot_dir);
	r = daemon_apply_settings(d);
	if (r < 0)
		return r;
	log_info("reloaded");
	return 0;
}
