import type { RealmPlaygroundRow } from '../../db/repos/realm_playgrounds.js';

export interface RealmPlaygroundDict {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

export function formatRealmPlayground(row: RealmPlaygroundRow): RealmPlaygroundDict {
  return { id: row.id, name: row.name, pygments_language: row.pygments_language, url_template: row.url_template };
}
