import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real OpenLDAP server (Debian's slapd) for the directory tests: its own configuration and
 * database in a temporary directory, loaded from an LDIF before it starts, listening on a
 * loopback port. `skipReason` says why the tests cannot run when slapd is not installed.
 */

const SLAPD = '/usr/sbin/slapd';
const SLAPADD = '/usr/sbin/slapadd';
const SCHEMA_DIR = '/etc/ldap/schema';
const MODULE_DIR = '/usr/lib/ldap';

export const LDAP_SUFFIX = 'dc=example,dc=com';
export const LDAP_ADMIN_DN = `cn=admin,${LDAP_SUFFIX}`;
export const LDAP_ADMIN_PASSWORD = 'directory admin secret';

export const slapdSkipReason: string | false = [SLAPD, SLAPADD, join(SCHEMA_DIR, 'inetorgperson.schema')].every((f) => existsSync(f))
  ? false
  : 'slapd is not installed (apt-get install slapd ldap-utils; .ci/run installs them)';

export interface Slapd {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Starts it again on the same port and data (after stop). */
  start(): Promise<void>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > deadline) throw new Error(`slapd did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts slapd with `ldif` loaded below dc=example,dc=com (the suffix entry itself is created here). */
export async function startSlapd(ldif: string): Promise<Slapd> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-slapd-'));
  mkdirSync(join(dir, 'db'));
  const conf = join(dir, 'slapd.conf');
  writeFileSync(
    conf,
    [
      ...['core', 'cosine', 'inetorgperson', 'nis'].map((s) => `include ${SCHEMA_DIR}/${s}.schema`),
      `pidfile ${join(dir, 'slapd.pid')}`,
      `modulepath ${MODULE_DIR}`,
      'moduleload back_mdb',
      'database mdb',
      `suffix "${LDAP_SUFFIX}"`,
      `rootdn "${LDAP_ADMIN_DN}"`,
      `rootpw "${LDAP_ADMIN_PASSWORD}"`,
      `directory ${join(dir, 'db')}`,
      'maxsize 10485760',
      'access to attrs=userPassword by anonymous auth by self write by * none',
      'access to * by * read',
      '',
    ].join('\n'),
  );
  const base = `dn: ${LDAP_SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n`;
  writeFileSync(join(dir, 'data.ldif'), base + ldif);
  const add = spawnSync(SLAPADD, ['-f', conf, '-l', join(dir, 'data.ldif')], { encoding: 'utf8' });
  if (add.status !== 0) throw new Error(`slapadd failed: ${add.stderr}`);
  const port = await freePort();
  const url = `ldap://127.0.0.1:${port}`;
  let proc: ChildProcess | null = null;
  const start = async () => {
    // -d 0: stay in the foreground (so the test owns the process) without debug output.
    proc = spawn(SLAPD, ['-f', conf, '-h', `${url}/`, '-d', '0'], { stdio: 'ignore' });
    await waitForPort(port, 10_000);
  };
  const stop = async () => {
    const p = proc;
    proc = null;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGTERM');
    });
  };
  await start();
  return {
    url,
    port,
    start,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One inetOrgPerson entry below ou=people. */
export function personLdif(p: { uid: string; cn: string; sn: string; mail?: string; password: string; employeeType?: string }): string {
  const lines = [
    `dn: uid=${p.uid},ou=people,${LDAP_SUFFIX}`,
    'objectClass: inetOrgPerson',
    `uid: ${p.uid}`,
    `cn: ${p.cn}`,
    `sn: ${p.sn}`,
    `userPassword: ${p.password}`,
  ];
  if (p.mail) lines.push(`mail: ${p.mail}`);
  if (p.employeeType) lines.push(`employeeType: ${p.employeeType}`);
  return `${lines.join('\n')}\n\n`;
}

export const PEOPLE_OU = `dn: ou=people,${LDAP_SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n`;
