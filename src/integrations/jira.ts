import { AnomalousPayloadError, UnsupportedEventError, field, has, str, truthy, type Integration, type UserDirectory } from './types.js';
import { PUNCTUATION } from './git.js';

/**
 * Jira (Zulip's zerver/webhooks/jira): issue created, updated (with the changelog, comments and
 * transitions folded in), deleted, and the comment events; Jira markup converted to Markdown and
 * Jira users named by their Zulip name when Zulip can guess the account.
 */

const IGNORED_EVENTS = [
  'attachment_created',
  'issuelink_created',
  'issuelink_deleted',
  'jira:version_released',
  'jira:worklog_updated',
  'sprint_closed',
  'sprint_started',
  'worklog_created',
  'worklog_updated',
];

/** Zulip's get_in: the value at the path, or the default when any step is missing. */
function getIn(p: unknown, keys: string[], fallback: unknown = ''): unknown {
  let v: unknown = p;
  for (const k of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, k)) return fallback;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function getInStr(p: unknown, keys: string[], fallback = ''): string {
  const v = getIn(p, keys, fallback);
  if (typeof v !== 'string') throw new AnomalousPayloadError();
  return v;
}

function optionalString(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new AnomalousPayloadError();
  return v;
}

async function convertJiraMarkup(content: string, users: UserDirectory): Promise<string> {
  let c = content.replace(/\*([^*]+)\*/g, '**$1**');
  c = c.replace(/\{\{([^*]+?)\}\}/g, '`$1`');
  c = c.replace(/bq\. (.*)/g, '> $1');
  c = c.replace(/\{quote\}([\s\S]*?)\{quote\}/g, '~~~ quote\n$1\n~~~');
  c = c.replace(/\{noformat\}([\s\S]*?)\{noformat\}/g, '~~~\n$1\n~~~');
  c = c.replace(/\{code[^\n]*\}([\s\S]*?)\{code\}/g, '~~~\n$1\n~~~');
  // Bare links first ([url]); a | marks a titled link ([title|url]).
  c = c.replace(/\[([^|~]+?)\]/g, '[$1]($1)');
  c = c.replace(/\[(?:([^|~]+)\|)([^\]]*)\]/g, '[$1]($2)');
  for (const m of [...c.matchAll(/\[~(.*?)\]/g)]) {
    const username = m[1]!;
    const name = await users.guessFullName(username);
    c = c.replaceAll(`[~${username}]`, `**${name ?? username}**`);
  }
  return c;
}

function issueId(p: unknown): string {
  // Some old Jira versions send comment events without the issue; the comment's URL holds its ID.
  if (!has(p, 'issue')) {
    const parts = str(p, 'comment', 'self').split('/');
    return parts.at(-3) ?? '';
  }
  return getInStr(p, ['issue', 'key']);
}

const issueTitle = (p: unknown): string => (has(p, 'issue') ? getInStr(p, ['issue', 'fields', 'summary']) : 'Upgrade Jira to get the issue title here.');

/** A link to /browse/<key>, guessed from the issue's REST URL as Zulip does. */
function issueString(p: unknown, id: string | null = null, withTitle = false): string {
  const key = id ?? issueId(p);
  const text = withTitle ? `${key}: ${issueTitle(p)}` : key;
  const base = /(.*)\/rest\/api\/.*/.exec(getInStr(p, ['issue', 'self']));
  return base ? `[${text}](${base[1]}/browse/${key})` : text;
}

const issueAuthor = (p: unknown): string => getInStr(p, ['user', 'displayName']);

function subEventForUpdate(p: unknown): string {
  const sub = field(p, 'issue_event_type_name') ?? '';
  if (typeof sub !== 'string') throw new AnomalousPayloadError();
  if (sub === '') {
    if (truthy(field(p, 'comment'))) return 'issue_commented';
    if (truthy(field(p, 'transition'))) return 'issue_transited';
  }
  return sub;
}

function addChangeInfo(content: string, fieldName: string | null, from: string | null, to: string | null): string {
  let c = content + `* Changed ${fieldName ?? 'None'}`;
  if (from) c += ` from **${from}**`;
  if (to) c += ` to ${to}\n`;
  return c;
}

async function updatedIssue(p: unknown, users: UserDirectory): Promise<string> {
  const id = getInStr(p, ['issue', 'key']);
  const issue = issueString(p, id, true);
  const assigneeEmail = getInStr(p, ['issue', 'fields', 'assignee', 'emailAddress'], '');
  const assigneeMention = assigneeEmail !== '' ? `**${(await users.fullNameByDeliveryEmail(assigneeEmail)) ?? assigneeEmail}**` : '';
  const assigneeBlurb = assigneeMention !== '' ? ` (assigned to ${assigneeMention})` : '';
  const sub = subEventForUpdate(p);
  if (sub.includes('comment')) {
    const verb = sub === 'issue_commented' ? 'commented on' : sub === 'issue_comment_edited' ? 'edited a comment on' : 'deleted a comment from';
    const author = field(p, 'webhookEvent') === 'comment_created' ? str(p, 'comment', 'author', 'displayName') : issueAuthor(p);
    const content = `${author} ${verb} ${issue}${assigneeBlurb}`;
    const comment = getInStr(p, ['comment', 'body']);
    if (comment) return `${content}:\n\n\`\`\` quote\n${await convertJiraMarkup(comment, users)}\n\`\`\``;
    return `${content}.`;
  }
  let content = `${issueAuthor(p)} updated ${issue}${assigneeBlurb}:\n\n`;
  const changelog = field(p, 'changelog');
  if (truthy(changelog)) {
    const items = field(changelog, 'items');
    if (!Array.isArray(items)) throw new AnomalousPayloadError();
    for (const item of items) {
      const fieldName = optionalString(field(item, 'field'));
      const target = fieldName === 'assignee' && assigneeMention !== '' ? assigneeMention : `**${optionalString(field(item, 'toString')) ?? 'None'}**`;
      const from = optionalString(field(item, 'fromString'));
      content = addChangeInfo(content, fieldName, from, target);
    }
  } else if (sub === 'issue_transited') {
    content = addChangeInfo(content, 'status', getInStr(p, ['transition', 'from_status']), `**${getInStr(p, ['transition', 'to_status'])}**`);
  }
  return content;
}

function createdIssue(p: unknown): string {
  const assignee = getIn(p, ['issue', 'fields', 'assignee', 'displayName'], 'no one');
  if (typeof assignee !== 'string') throw new AnomalousPayloadError();
  return `${issueAuthor(p)} created ${issueString(p, null, true)}:\n\n* **Priority**: ${getInStr(p, ['issue', 'fields', 'priority', 'name'])}\n* **Assignee**: ${assignee}`;
}

function deletedIssue(p: unknown): string {
  const title = issueTitle(p);
  const punctuation = PUNCTUATION.includes(title.at(-1) ?? '') ? '' : '.';
  return `${issueAuthor(p)} deleted ${issueString(p, null, true)}${punctuation}`;
}

/** Jira escapes "!" in comment bodies as "\\!". */
const normalizeComment = (comment: string): string => comment.replaceAll('\\!', '!');

const commentEvent =
  (verb: string, strike = false) =>
  (p: unknown): string => {
    const comment = normalizeComment(str(p, 'comment', 'body'));
    return `${str(p, 'comment', 'author', 'displayName')} ${verb} issue: *"${issueTitle(p)}"*\n\`\`\` quote\n${strike ? `~~${comment}~~` : comment}\n\`\`\`\n`;
  };

const CONTENT: Record<string, (p: unknown, users: UserDirectory) => string | Promise<string>> = {
  'jira:issue_created': createdIssue,
  'jira:issue_deleted': deletedIssue,
  'jira:issue_updated': updatedIssue,
  comment_created: commentEvent('commented on'),
  comment_updated: commentEvent('updated their comment on'),
  comment_deleted: commentEvent('deleted their comment on', true),
};

export const jiraIntegration: Integration = {
  name: 'jira',
  webhookName: 'Jira',
  jsonBody: true,
  unquoteUrlParameters: true,
  async handle(req, users) {
    const p = req.payload;
    let event = optionalString(field(p, 'webhookEvent'));
    if (event === null && truthy(field(p, 'transition'))) event = 'jira:issue_updated';
    if (event !== null && IGNORED_EVENTS.includes(event)) return [];
    if (event === null) throw new AnomalousPayloadError();
    const content = Object.hasOwn(CONTENT, event) ? CONTENT[event]! : null;
    if (!content) throw new UnsupportedEventError(event);
    const topic = `${issueId(p)}: ${issueTitle(p)}`;
    return [{ topic, body: await content(p, users), eventType: event }];
  },
};
