# redis-py (redis.sentinel.Sentinel, from PyPI) through a Sentinel endpoint, driven by redis-py.test.ts: finds the
# master by name, writes SET + WAIT 1 (a write counts as acknowledged only when a replica has it), reports where it
# wrote; after a line on stdin (the failover has started) writes until a write lands on another master.
# redis-py does not subscribe to +switch-master: it leaves a demoted master on its READONLY reply and asks the
# Sentinel again. Passwords come from the environment, never the command line.
# Prints one JSON object per line: ready, then moved (exit 0) or stuck (exit 1).
import json
import os
import sys
import time

from redis.exceptions import ConnectionError, ReadOnlyError, ResponseError, TimeoutError
from redis.sentinel import Sentinel


def say(**fields):
    print(json.dumps(fields), flush=True)


host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sentinel = Sentinel(
    [(host, port)],
    sentinel_kwargs={"password": os.environ["SENTINEL_PASSWORD"]},
    password=os.environ["REDIS_PASSWORD"],
    socket_timeout=2,
)
master = sentinel.master_for(name)
acked = 0
tried = 0


def write():
    """One SET + WAIT 1; the address of the server that took it (its side of the connection)."""
    global acked, tried
    tried += 1
    n = tried
    master.set("k", n)
    if master.execute_command("WAIT", 1, 1000) >= 1:
        acked = n
    return master.client_info()["laddr"]


first = write()
say(event="ready", master=first, discovered="%s:%d" % sentinel.discover_master(name), acked=acked)
sys.stdin.readline()
deadline = time.monotonic() + 20
errors = 0
last_error = ""
while time.monotonic() < deadline:
    try:
        at = write()
        if at != first:
            say(event="moved", master=at, acked=acked, errors=errors)
            sys.exit(0)
    except (ConnectionError, ReadOnlyError, ResponseError, TimeoutError) as e:
        errors += 1
        last_error = str(e)
    time.sleep(0.02)
say(event="stuck", acked=acked, errors=errors, last_error=last_error)
sys.exit(1)
