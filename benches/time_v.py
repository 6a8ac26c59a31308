"""Reads what `/usr/bin/time -v -o FILE` wrote (see benches/lib.sh): CPU seconds and peak RSS."""

import re


def time_v(path):
    """(user + system CPU seconds, peak resident set size in MiB) of one process."""
    t = open(path).read()
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    return user + system, rss / 1024
