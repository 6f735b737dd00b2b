#!/usr/bin/env python3
"""Writes FILE back and drops its clean pages from the page cache, so its next reader
maps it as a start after a reboot does: read from disk, not as the linker (or a copy)
just wrote it. Since Linux 6.16, ext4 keeps a freshly written file in large page-cache
folios, and mapping one page of a folio maps its neighbours too (docs/performance.md,
"Which pages the kernel maps"). Used by scripts/rss-guard.sh and
scripts/startup-faults.sh.

    scripts/drop-page-cache.py FILE
"""
import os
import sys

if len(sys.argv) != 2:
    sys.exit("usage: drop-page-cache.py FILE")
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
finally:
    os.close(fd)
