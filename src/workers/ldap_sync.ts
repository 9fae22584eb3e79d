import { doSyncLdap } from '../actions/ldap.js';
import { fetchActiveRealms } from '../db/repos/realms.js';
import type { LdapConfig } from '../config.js';
import type { Services } from '../services.js';

/**
 * `npx parley sync-ldap` on a timer (PARLEY_LDAP_SYNC_INTERVAL_MINUTES), for every active
 * organization, as Zulip's cron job runs sync_ldap_user_data. A pass that finds the directory
 * down changes nothing and is logged; the next pass tries again.
 */
export class LdapSyncWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly services: Services,
    private readonly cfg: LdapConfig,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.pass());
    }, this.cfg.syncIntervalMinutes * 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(): Promise<void> {
    for (const realm of await fetchActiveRealms(this.services.db.kysely)) {
      try {
        const summary = await doSyncLdap(this.services, this.cfg, realm);
        this.services.log.info({ realm: realm.id, ...summary }, 'ldap sync');
      } catch (e) {
        this.services.log.warn({ realm: realm.id, err: e instanceof Error ? e.message : String(e) }, 'ldap sync failed');
      }
    }
  }
}
