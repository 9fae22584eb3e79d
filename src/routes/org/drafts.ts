import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { badRequest } from '../../errors.js';
import { endpoint } from '../endpoint.js';
import { p } from '../params.js';
import { fetchUserDrafts } from '../../db/repos/drafts.js';
import { formatDraft } from '../../lib/format/drafts.js';
import {
  accessDraft,
  checkDraft,
  checkDraftsSynchronization,
  doCreateDrafts,
  doDeleteDraft,
  doEditDraft,
  type DraftInput,
} from '../../actions/drafts.js';

const DRAFT_KEYS = ['type', 'to', 'topic', 'content', 'timestamp'];
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/**
 * Zulip's DraftData model: exactly these keys, `timestamp` optional, `content` stripped and
 * non-blank. Errors name the value as Zulip does, e.g. `drafts[0]["content"] cannot be blank`.
 */
function parseDraft(value: unknown, where: string): DraftInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(`${where} is not a dict`);
  const d = value as Record<string, unknown>;
  const at = (key: string) => `${where}[${JSON.stringify(key)}]`;
  for (const key of ['type', 'to', 'topic', 'content']) {
    if (!(key in d)) throw badRequest(`${key} key is missing from ${where}`);
  }
  if (d.type !== '' && d.type !== 'stream' && d.type !== 'private') throw badRequest(`Invalid ${at('type')}`);
  if (!Array.isArray(d.to)) throw badRequest(`${at('to')} is not a list`);
  d.to.forEach((id, i) => {
    if (!isInteger(id)) throw badRequest(`${at('to')}[${i}] is not an integer`);
  });
  if (typeof d.topic !== 'string') throw badRequest(`${at('topic')} is not a string`);
  if (typeof d.content !== 'string') throw badRequest(`${at('content')} is not a string`);
  const content = d.content.trim();
  if (content === '') throw badRequest(`${at('content')} cannot be blank`);
  const timestamp = d.timestamp ?? undefined;
  if (timestamp !== undefined && (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || Math.abs(timestamp) > 2 ** 53)) {
    throw badRequest(`${at('timestamp')} is not a float`);
  }
  const extra = Object.keys(d).find((k) => !DRAFT_KEYS.includes(k));
  if (extra !== undefined) throw badRequest(`Argument "${extra}" at ${at(extra)} is unexpected`);
  return { type: d.type, to: d.to as number[], topic: d.topic, content, timestamp };
}

function parseJson(raw: string, name: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw badRequest(`${name} is not valid JSON`);
  }
}

const draftList = p.custom((raw, name) => {
  const value = parseJson(raw, name);
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  return value.map((d, i) => parseDraft(d, `${name}[${i}]`));
});

const oneDraft = p.custom((raw, name) => parseDraft(parseJson(raw, name), name));

export function registerDraftRoutes(app: FastifyInstance, services: Services): void {
  endpoint(app, services, {
    method: 'GET',
    path: '/drafts',
    authorize: checkDraftsSynchronization,
    params: {},
    handler: async ({ user }) => {
      const drafts = (await fetchUserDrafts(services.db.kysely, user.id)).map(formatDraft);
      return { count: drafts.length, drafts };
    },
  });

  endpoint(app, services, {
    method: 'POST',
    path: '/drafts',
    authorize: checkDraftsSynchronization,
    params: { drafts: draftList },
    handler: async ({ realm, user, params }) => {
      const checked = [];
      for (const d of params.drafts) checked.push(await checkDraft(services, realm, user, d));
      return { ids: await doCreateDrafts(services, user, checked) };
    },
  });

  endpoint(app, services, {
    method: 'PATCH',
    path: '/drafts/:draft_id',
    authorize: checkDraftsSynchronization,
    params: { draft_id: p.int(), draft: oneDraft },
    handler: async ({ realm, user, params }) => {
      const existing = await accessDraft(services, user, params.draft_id);
      await doEditDraft(services, user, existing, await checkDraft(services, realm, user, params.draft));
    },
  });

  endpoint(app, services, {
    method: 'DELETE',
    path: '/drafts/:draft_id',
    authorize: checkDraftsSynchronization,
    params: { draft_id: p.int() },
    handler: async ({ user, params }) => {
      await doDeleteDraft(services, user, await accessDraft(services, user, params.draft_id));
    },
  });
}
