// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hugepage.h"

size_t huge_page_size(void)
{
	size_t huge = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	char mode[128] = "";
	FILE *f;

	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (!f)
		return 0;
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = '\0';
	fclose(f);
	if (!mode[0] || strstr(mode, "[never]"))
		return 0;
	f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	if (!f)
		return 0;
	if (fscanf(f, "%zu", &huge) != 1)
		huge = 0;
	fclose(f);
	if (!huge || !page || huge % page)
		return 0;
	return huge;
}

size_t huge_pages_free_for(size_t bytes)
{
	size_t huge = huge_page_size(), page = (size_t)sysconf(_SC_PAGESIZE), blocks = 0;
	unsigned order = 0;
	char line[512];
	FILE *f;

	if (!huge)
		return 0;
	while ((page << order) < huge)
		order++;
	f = fopen("/proc/buddyinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "zone"), *end;

		if (!p)
			continue;
		p += strlen("zone");
		p += strspn(p, " \t");
		p += strcspn(p, " \t"); /* the zone's name */
		for (unsigned o = 0;; o++, p = end) {
			unsigned long n = strtoul(p, &end, 10);

			if (end == p)
				break;
			if (o >= order && o - order < 32)
				blocks += n << (o - order);
		}
	}
	fclose(f);
	return blocks * huge >= bytes ? huge : 0;
}
