#!/usr/bin/env python3
"""vm-tests/powercut's control: rewrites a JSON file in place, as gpuboot
must not (truncate, then 4 KiB chunks, each fsync'd), forever. A power cut
during a rewrite leaves it torn or zero-length on the disk, and the CHECK's
whole-file test must say so: the proof that the test can see what it looks
for. usage: control.py FILE [once]"""
import json
import os
import sys
import time

path = sys.argv[1]
n = 0
while True:
    n += 1
    data = json.dumps({"n": n, "pad": "x" * 60000}).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.fsync(fd)
    for i in range(0, len(data), 4096):
        os.write(fd, data[i:i + 4096])
        os.fsync(fd)
        time.sleep(0.02)
    os.close(fd)
    if sys.argv[2:] == ["once"]:
        break
