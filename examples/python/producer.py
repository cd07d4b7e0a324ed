#!/usr/bin/python3
"""Enqueues jobs into awa (psycopg 3). See README.md beside it.

  DATABASE_URL=postgresql://... /usr/bin/python3 producer.py KIND COUNT [MAX_ATTEMPTS] [ARGS_JSON]

Enqueues COUNT jobs of KIND on AWA_QUEUE (default: default) in one
transaction with awa.enqueue_many, and prints their job ids, one per line.
"""

import json
import os
import sys

import psycopg
from psycopg.types.json import Jsonb


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kind, count = argv[1], int(argv[2])
    max_attempts = int(argv[3]) if len(argv) > 3 else 25
    args = json.loads(argv[4]) if len(argv) > 4 else {}
    queue = os.environ.get("AWA_QUEUE", "default")
    # prepare_threshold=None: works behind pgbouncer < 1.21 in transaction mode.
    with psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=None) as conn:
        # jsonb[] needs Jsonb(...) per element; enqueue_many's result column is
        # named here (it returns SETOF bigint).
        rows = conn.execute(
            "SELECT j AS job_id FROM awa.enqueue_many(%s, %s, queue => %s, max_attempts => %s) AS j",
            ([kind] * count, [Jsonb({**args, "n": i}) for i in range(count)], queue, max_attempts),
        ).fetchall()
        # One job is one call too: SELECT awa.enqueue(%s, %s, queue => %s) with Jsonb(args).
    for (job_id,) in rows:
        print(job_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
