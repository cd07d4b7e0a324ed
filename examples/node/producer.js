#!/usr/bin/env node
// Enqueues jobs into awa (node-postgres). See README.md.
//
//   DATABASE_URL=postgresql://... node producer.js KIND COUNT [MAX_ATTEMPTS] [ARGS_JSON]
//
// Enqueues COUNT jobs of KIND on AWA_QUEUE (default: default) in one
// transaction with awa.enqueue_many and prints their job ids, one per line.
'use strict';

const { Client } = require('pg');

async function main(argv) {
  if (argv.length < 4) {
    console.error('usage: node producer.js KIND COUNT [MAX_ATTEMPTS] [ARGS_JSON]');
    return 2;
  }
  const kind = argv[2];
  const count = Number(argv[3]);
  const maxAttempts = argv.length > 4 ? Number(argv[4]) : 25;
  const args = argv.length > 5 ? JSON.parse(argv[5]) : {};
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    // jsonb values are sent as JSON text: JSON.stringify each one (a jsonb[]
    // parameter is a JS array of strings). enqueue_many returns SETOF bigint:
    // name its column. Job ids arrive as strings (bigint).
    const { rows } = await client.query(
      'SELECT j AS job_id FROM awa.enqueue_many($1, $2::jsonb[], queue => $3, max_attempts => $4) AS j',
      [Array(count).fill(kind), Array.from({ length: count }, (_, n) => JSON.stringify({ ...args, n })),
        process.env.AWA_QUEUE || 'default', maxAttempts]);
    // One job is one call too: SELECT awa.enqueue($1, $2::jsonb, queue => $3) with JSON.stringify(args).
    for (const row of rows) console.log(row.job_id);
  } finally {
    await client.end();
  }
  return 0;
}

main(process.argv).then((code) => process.exit(code), (e) => { console.error(e.stack || String(e)); process.exit(1); });
