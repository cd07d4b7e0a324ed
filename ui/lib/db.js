'use strict';
// The UI's one way into the database: every page reads in a READ ONLY
// transaction and every action writes in a transaction of its own, each as one
// of awa's roles (SET LOCAL ROLE), so what a visitor may do is what
// PostgreSQL's grants allow that role, whatever the UI's code does:
//   a visitor      -> awa_monitor (counts, metrics, jobs without args)
//   a logged-in admin -> awa_admin (also args, job documents, the DLQ, actions)
const { Pool } = require('pg');

const ROLES = new Set(['awa_monitor', 'awa_admin']);

class Database {
  constructor(config) {
    this.statementTimeoutMs = config.statementTimeoutMs;
    this.pool = new Pool({
      connectionString: config.databaseUrl,
      max: 4,
      idleTimeoutMillis: 30000,
      application_name: 'awa-ui',
      // A server that does not answer at all (stopped, unreachable) must not
      // hold a request for ever: statement_timeout needs a server that runs.
      connectionTimeoutMillis: 10000,
      query_timeout: config.statementTimeoutMs + 5000,
    });
    // A connection that fails while checked out (the server restarted, the
    // backend was terminated) ends its query with an error; the client's own
    // 'error' event must not end the process.
    this.pool.on('connect', (client) => {
      client.on('error', (err) => console.error(`awa-ui: connection failed: ${err.message}`));
    });
    // A connection that fails while idle in the pool is dropped by the pool;
    // the error must not end the process.
    this.pool.on('error', (err) => console.error(`awa-ui: idle connection failed: ${err.message}`));
  }

  // The connecting role must be a member of awa_monitor, and of awa_admin
  // when actions are enabled: said at start, not at the first click.
  async checkRoles(needAdmin) {
    const r = await this.pool.query(
      `SELECT current_user AS login,
              pg_has_role(current_user, 'awa_monitor', 'MEMBER') AS monitor,
              pg_has_role(current_user, 'awa_admin', 'MEMBER') AS admin,
              EXISTS (SELECT FROM pg_extension WHERE extname = 'awa') AS installed`);
    const row = r.rows[0];
    if (!row.installed) throw new Error('the awa extension is not installed in this database (CREATE EXTENSION awa)');
    if (!row.monitor) {
      throw new Error(`role ${row.login} is not a member of awa_monitor: GRANT awa_monitor TO ${row.login};`);
    }
    if (needAdmin && !row.admin) {
      throw new Error(`AWA_UI_ADMIN_PASSWORD is set but role ${row.login} is not a member of awa_admin: ` +
        `GRANT awa_admin TO ${row.login}; (or unset the password for a read-only UI)`);
    }
    return row.login;
  }

  // fn(client) inside one transaction as role; READ ONLY unless write.
  async as(role, write, fn) {
    if (!ROLES.has(role)) throw new Error(`unknown role ${role}`);
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query(write ? 'BEGIN' : 'BEGIN READ ONLY');
      await client.query(`SET LOCAL ROLE ${role}`);
      await client.query(`SET LOCAL statement_timeout = ${Number(this.statementTimeoutMs)}`);
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (_) {
        broken = true;
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }

  read(role, fn) {
    return this.as(role, false, fn);
  }

  write(fn) {
    return this.as('awa_admin', true, fn);
  }

  end() {
    return this.pool.end();
  }
}

module.exports = { Database };
