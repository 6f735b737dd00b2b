"""Waits until a URL answers 2xx: `python3 wait-http.py URL SECONDS`. Exits 1 on timeout.

Used by scripts/startup-order.sh and scripts/rss-guard.sh, so they need no curl.
"""

import sys
import time
import urllib.request

url, seconds = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + seconds
while True:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            if 200 <= response.status < 300:
                sys.exit(0)
    except OSError:
        pass
    if time.monotonic() > deadline:
        print(f"wait-http: {url} did not answer within {seconds:g} s", file=sys.stderr)
        sys.exit(1)
    time.sleep(0.2)
