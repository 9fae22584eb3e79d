/**
 * The message builders Zulip's Git integrations share (zerver/lib/webhooks/git.py): pushes
 * with their commit lists, pull requests and issues, tags, commit comments.
 */

export const COMMITS_LIMIT = 20;
const PUSH_COMMITTERS_LIMIT_INFO = 3;

export const topicWithBranch = (repo: string, branch: string): string => `${repo} / ${branch}`;
export const topicWithPrOrIssueInfo = (repo: string, type: string, id: number, title: string): string => `${repo} / ${type} #${id} ${title}`;

/** Python's string.punctuation. */
export const PUNCTUATION = `!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`;

export const contentMessage = (message: string): string => `\n~~~ quote\n${message}\n~~~`;

export interface CommitData {
  name: string;
  sha: string;
  url: string | null;
  message: string;
}

export function getShortSha(sha: string): string {
  return sha.slice(0, 11);
}

/** Committers by commit count, ties alphabetically; beyond three, the rest as "others". */
function getAllCommitters(commits: readonly CommitData[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const c of commits) counts.set(c.name, (counts.get(c.name) ?? 0) + 1);
  let items = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (items.length > PUSH_COMMITTERS_LIMIT_INFO) {
    const others = items.slice(PUSH_COMMITTERS_LIMIT_INFO).reduce((n, [, c]) => n + c, 0);
    items = [...items.slice(0, PUSH_COMMITTERS_LIMIT_INFO), ['others', others]];
  }
  return items;
}

function rstrip(s: string): string {
  return s.replace(/\s+$/u, '');
}

export function getCommitsContent(commits: readonly CommitData[], isTruncated = false): string {
  let content = '';
  for (const c of commits.slice(0, COMMITS_LIMIT)) {
    const first = c.message.split('\n', 1)[0]!;
    content += `* ${first} ([${getShortSha(c.sha)}](${c.url ?? 'None'}))\n`;
  }
  if (commits.length > COMMITS_LIMIT) content += `[and ${commits.length - COMMITS_LIMIT} more commit(s)]`;
  else if (isTruncated) content += '[and more commit(s)]';
  return rstrip(content);
}

export function getPushCommitsEventMessage(opts: {
  userName: string;
  compareUrl: string | null;
  branchName: string;
  commits: readonly CommitData[];
  isTruncated?: boolean;
  deleted?: boolean;
  forcePush?: boolean;
  repositoryName?: string | null;
  repositoryUrl?: string | null;
}): string {
  const { userName, compareUrl, branchName, commits } = opts;
  if (commits.length === 0 && opts.deleted) return `${userName} [deleted](${compareUrl}) the branch ${branchName}.`;
  const pushType = opts.forcePush ? 'force pushed' : 'pushed';
  if (commits.length === 0) {
    return compareUrl ? `${userName} [${pushType}](${compareUrl}) the branch ${branchName}.` : `${userName} ${pushType} the branch ${branchName}.`;
  }
  const commitWord = `commit${commits.length > 1 ? 's' : ''}`;
  const pushed = compareUrl ? `[${pushType}](${compareUrl}) ${commits.length} ${commitWord}` : `${pushType} ${commits.length} ${commitWord}`;
  const base =
    opts.repositoryName && opts.repositoryUrl
      ? `${userName} ${pushed} to branch ${branchName} of [${opts.repositoryName}](${opts.repositoryUrl}).`
      : `${userName} ${pushed} to branch ${branchName}.`;
  const committers = getAllCommitters(commits);
  const content = getCommitsContent(commits, opts.isTruncated);
  if (committers.length === 1 && userName === committers[0]![0]) return rstrip(`${base}\n\n${content}\n`);
  let details = `${committers[0]![0]} (${committers[0]![1]})`;
  for (const [name, n] of committers.slice(1, -1)) details = `${details}, ${name} (${n})`;
  if (committers.length > 1) {
    const [name, n] = committers.at(-1)!;
    details = `${details} and ${name} (${n})`;
  }
  return rstrip(`${base} Commits by ${details}.\n\n${content}\n`);
}

/**
 * A pull request or issue event: "<user> <action> [<type> #<id> <title>](<url>)", with branch
 * and assignee details, ending in ":" and the quoted text when there is one. The title (only
 * when the URL fixes the topic) keeps its own final punctuation.
 */
export function getPullRequestEventMessage(opts: {
  userName: string;
  action: string;
  url: string;
  number?: number | null;
  targetBranch?: string | null;
  baseBranch?: string | null;
  message?: string | null;
  assignee?: string | null;
  assignees?: readonly { username: string }[] | null;
  reviewer?: string | null;
  type?: string;
  title?: string | null;
}): string {
  const actionMessages: Record<string, string> = { approval: 'added their approval for', unapproval: 'removed their approval for' };
  const id = opts.number !== undefined && opts.number !== null ? ` #${opts.number}` : '';
  const title = opts.title !== undefined && opts.title !== null ? ` ${opts.title}` : '';
  let main = `${opts.userName} ${actionMessages[opts.action] ?? opts.action} [${opts.type ?? 'PR'}${id}${title}](${opts.url})`;
  if (opts.targetBranch && opts.baseBranch) main = `${main} from \`${opts.targetBranch}\` to \`${opts.baseBranch}\``;
  const assignees = opts.assignees && opts.assignees.length > 0 ? opts.assignees : null;
  if (assignees) {
    const names = assignees.map((a) => a.username);
    main = `${main} (assigned to ${names.length === 1 ? names[0] : names.slice(0, -1).join(', ') + ' and ' + names.at(-1)})`;
  } else if (opts.assignee) {
    main = `${main} (assigned to ${opts.assignee})`;
  } else if (opts.reviewer) {
    main = `${main} (assigned reviewers: ${opts.reviewer})`;
  }
  const punctuation = opts.message ? ':' : '.';
  if (assignees || opts.assignee || (opts.targetBranch && opts.baseBranch) || opts.title === undefined || opts.title === null || !PUNCTUATION.includes(opts.title.at(-1) ?? '')) {
    main = `${main}${punctuation}`;
  }
  if (opts.message) main += '\n' + contentMessage(opts.message);
  return rstrip(main);
}

export function getPushTagEventMessage(userName: string, tagName: string, tagUrl: string | null = null, action = 'pushed'): string {
  const tag = tagUrl ? `[${tagName}](${tagUrl})` : tagName;
  const message = `${userName} ${action} tag ${tag}`;
  return PUNCTUATION.includes(tagName.at(-1) ?? '') ? message : `${message}.`;
}

export function getCommitsCommentActionMessage(userName: string, action: string, commitUrl: string, sha: string, message: string | null = null): string {
  let content = `${userName} ${action} on [${getShortSha(sha)}](${commitUrl})`;
  content += message ? ':' : '.';
  if (message) content += contentMessage(message);
  return content;
}

export function getSetupWebhookMessage(integration: string, userName: string | null = null): string {
  return `${integration} webhook has been successfully configured${userName ? ` by ${userName}` : ''}.`;
}
