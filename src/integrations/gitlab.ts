import { JsonableError } from '../errors.js';
import { UnsupportedEventError, field, has, list, num, optStr, requireHeader, str, truthy, type Integration } from './types.js';
import {
  getCommitsCommentActionMessage,
  getPullRequestEventMessage,
  getPushCommitsEventMessage,
  getPushTagEventMessage,
  topicWithPrOrIssueInfo,
  type CommitData,
} from './git.js';

/**
 * GitLab (Zulip's zerver/webhooks/gitlab): the X-GitLab-Event header, refined by the object's
 * action or noteable type ("Merge Request Hook open", "Note Hook Issue"); System Hooks are
 * mapped from their event name. With a `topic` in the URL, the message names the project and
 * the MR or issue title.
 */

const EMPTY_SHA = '0000000000000000000000000000000000000000';

type Body = (p: unknown, includeTitle: boolean) => string;

const userName = (p: unknown): string => str(p, 'user_name');
const issueUserName = (p: unknown): string => str(p, 'user', 'name');
const repoName = (p: unknown): string => (has(p, 'project') ? str(p, 'project', 'name') : str(p, 'repository', 'name'));
const projectHomepage = (p: unknown): string => (has(p, 'project') ? str(p, 'project', 'web_url') : str(p, 'repository', 'homepage'));
const branchName = (p: unknown): string => str(p, 'ref').replace('refs/heads/', '');
const tagName = (p: unknown): string => str(p, 'ref').replace('refs/tags/', '');
const objectUrl = (p: unknown): string => str(p, 'object_attributes', 'url');
const titleIf = (include: boolean, p: unknown, ...path: string[]): string | null => (include ? str(p, ...path) : null);

/** Assignees (or the single assignee) by full name, which Zulip shows instead of usernames. */
function assignees(p: unknown): { username: string }[] {
  let list_: unknown[] = [];
  if (truthy(field(p, 'assignees'))) list_ = list(p, 'assignees');
  else if (truthy(field(p, 'assignee'))) list_ = [field(p, 'assignee')];
  return list_.map((a) => ({ username: str(a, 'name') }));
}

const pushBody: Body = (p) => {
  const after = field(p, 'after');
  if (truthy(after) && str(p, 'after') === EMPTY_SHA) return `${userName(p)} deleted branch ${branchName(p)}.`;
  const commits: CommitData[] = list(p, 'commits').map((c) => ({ name: str(c, 'author', 'name'), sha: str(c, 'id'), message: str(c, 'message'), url: str(c, 'url') }));
  return getPushCommitsEventMessage({
    userName: userName(p),
    compareUrl: `${projectHomepage(p)}/-/compare/${str(p, 'before')}...${str(p, 'after')}`,
    branchName: branchName(p),
    commits,
  });
};

const issueCreatedBody: Body = (p, includeTitle) => {
  const raw = optStr(p, 'object_attributes', 'description');
  // GitLab issue templates leave hidden HTML comments; Zulip drops them.
  const description = raw ? raw.replace(/<!--[\s\S]*?-->/g, '').trimEnd() : null;
  return getPullRequestEventMessage({
    userName: issueUserName(p),
    action: 'created',
    url: objectUrl(p),
    number: num(p, 'object_attributes', 'iid'),
    message: description,
    assignees: assignees(p),
    title: titleIf(includeTitle, p, 'object_attributes', 'title'),
    type: 'issue',
  });
};

const issueBody =
  (action: string): Body =>
  (p, includeTitle) =>
    getPullRequestEventMessage({
      userName: issueUserName(p),
      action,
      url: objectUrl(p),
      number: num(p, 'object_attributes', 'iid'),
      title: titleIf(includeTitle, p, 'object_attributes', 'title'),
      type: 'issue',
    });

const mergeRequestBody =
  (action: string): Body =>
  (p, includeTitle) => {
    const mr = field(p, 'object_attributes');
    const merged = action === 'merged';
    return getPullRequestEventMessage({
      userName: issueUserName(p),
      action,
      url: str(mr, 'url'),
      number: num(mr, 'iid'),
      targetBranch: merged ? str(mr, 'source_branch') : null,
      baseBranch: merged ? str(mr, 'target_branch') : null,
      type: 'MR',
      title: titleIf(includeTitle, p, 'object_attributes', 'title'),
    });
  };

const mergeRequestOpenOrUpdatedBody =
  (action: string): Body =>
  (p, includeTitle) => {
    const mr = field(p, 'object_attributes');
    const created = action === 'created';
    return getPullRequestEventMessage({
      userName: issueUserName(p),
      action,
      url: str(mr, 'url'),
      number: num(mr, 'iid'),
      targetBranch: created ? str(mr, 'source_branch') : null,
      baseBranch: created ? str(mr, 'target_branch') : null,
      message: optStr(mr, 'description') ?? null,
      assignees: assignees(p),
      type: 'MR',
      title: titleIf(includeTitle, p, 'object_attributes', 'title'),
    });
  };

const mergeRequestUpdatedBody: Body = (p, includeTitle) =>
  truthy(field(p, 'object_attributes', 'oldrev')) ? mergeRequestBody('added commit(s) to')(p, includeTitle) : mergeRequestOpenOrUpdatedBody('updated')(p, includeTitle);

const commentedOn =
  (key: string, type: string): Body =>
  (p, includeTitle) =>
    getPullRequestEventMessage({
      userName: issueUserName(p),
      action: `[commented](${str(p, 'object_attributes', 'url')}) on`,
      url: str(p, key, 'url'),
      number: num(p, key, 'iid'),
      message: str(p, 'object_attributes', 'note'),
      type,
      title: titleIf(includeTitle, p, key, 'title'),
    });

const commentedSnippetBody: Body = (p, includeTitle) => {
  // The snippet's URL is in payloads from GitLab 16.1 on.
  const url = has(field(p, 'snippet'), 'url') ? str(p, 'snippet', 'url') : `${str(p, 'project', 'web_url')}/-/snippets/${num(p, 'snippet', 'id')}`;
  return getPullRequestEventMessage({
    userName: issueUserName(p),
    action: `[commented](${str(p, 'object_attributes', 'url')}) on`,
    url,
    number: num(p, 'snippet', 'id'),
    message: str(p, 'object_attributes', 'note'),
    type: 'snippet',
    title: titleIf(includeTitle, p, 'snippet', 'title'),
  });
};

const wikiBody =
  (action: string): Body =>
  (p) =>
    `${issueUserName(p)} ${action} [wiki page "${str(p, 'object_attributes', 'title')}"](${str(p, 'object_attributes', 'url')}).`;

const buildBody: Body = (p) => {
  const status = str(p, 'build_status');
  const action = status === 'created' ? 'was created' : status === 'running' ? 'started' : `changed status to ${status}`;
  return `Build ${str(p, 'build_name')} from ${str(p, 'build_stage')} stage ${action}.`;
};

const pipelineBody: Body = (p) => {
  const status = str(p, 'object_attributes', 'status');
  const action = status === 'pending' ? 'was created' : status === 'running' ? 'started' : `changed status to ${status}`;
  const home = projectHomepage(p);
  const id = num(p, 'object_attributes', 'id');
  let builds = '';
  for (const b of list(p, 'builds')) {
    const buildUrl = `${home}/-/jobs/${num(b, 'id')}`;
    const artifact = field(b, 'artifacts_file', 'filename');
    const artifactLine = truthy(artifact)
      ? `  * built artifact: *${str(b, 'artifacts_file', 'filename')}* [[Browse](${buildUrl}/artifacts/browse)|[Download](${buildUrl}/artifacts/download)]\n`
      : '';
    builds += `* [${str(b, 'name')}](${buildUrl}) - ${str(b, 'status')}\n${artifactLine}`;
  }
  return `[Pipeline (${id})](${home}/-/pipelines/${id}) ${action} with build(s):\n${builds.slice(0, -1)}.`;
};

const EVENT_BODIES: Record<string, Body> = {
  'Push Hook': pushBody,
  'Tag Push Hook': (p) => getPushTagEventMessage(userName(p), tagName(p), null, truthy(field(p, 'checkout_sha')) ? 'pushed' : 'removed'),
  'Test Hook': (p) => `Webhook for **${repoName(p)}** has been configured successfully! :tada:`,
  'Issue Hook open': issueCreatedBody,
  'Issue Hook close': issueBody('closed'),
  'Issue Hook reopen': issueBody('reopened'),
  'Issue Hook update': issueBody('updated'),
  'Confidential Issue Hook open': issueCreatedBody,
  'Confidential Issue Hook close': issueBody('closed'),
  'Confidential Issue Hook reopen': issueBody('reopened'),
  'Confidential Issue Hook update': issueBody('updated'),
  'Note Hook Commit': (p) =>
    getCommitsCommentActionMessage(issueUserName(p), `[commented](${str(p, 'object_attributes', 'url')})`, str(p, 'commit', 'url'), str(p, 'commit', 'id'), str(p, 'object_attributes', 'note')),
  'Note Hook MergeRequest': commentedOn('merge_request', 'MR'),
  'Note Hook Issue': commentedOn('issue', 'issue'),
  'Confidential Note Hook Issue': commentedOn('issue', 'issue'),
  'Note Hook Snippet': commentedSnippetBody,
  'Merge Request Hook approved': mergeRequestBody('approved'),
  'Merge Request Hook unapproved': mergeRequestBody('unapproved'),
  'Merge Request Hook open': mergeRequestOpenOrUpdatedBody('created'),
  'Merge Request Hook update': mergeRequestUpdatedBody,
  'Merge Request Hook merge': mergeRequestBody('merged'),
  'Merge Request Hook close': mergeRequestBody('closed'),
  'Merge Request Hook reopen': mergeRequestBody('reopened'),
  'Wiki Page Hook create': wikiBody('created'),
  'Wiki Page Hook update': wikiBody('updated'),
  'Job Hook': buildBody,
  'Build Hook': buildBody,
  'Pipeline Hook': pipelineBody,
};

/** Python's str.title(): each run of letters capitalized. */
function pyTitle(s: string): string {
  return s.toLowerCase().replace(/(^|[^\p{L}])(\p{L})/gu, (_m, pre: string, c: string) => pre + c.toUpperCase());
}

function zulipEvent(header: string, p: unknown, branches: string | undefined): string | null {
  let event = header;
  if (event === 'System Hook') {
    const name = has(p, 'event_name') ? str(p, 'event_name') : str(p, 'object_kind');
    event = `${pyTitle(name.split('__')[0]!.replaceAll('_', ' '))} Hook`;
  }
  if (['Confidential Issue Hook', 'Issue Hook', 'Merge Request Hook', 'Wiki Page Hook'].includes(event)) {
    const action = field(p, 'object_attributes', 'action') ?? 'open';
    event = `${event} ${str(action)}`;
  } else if (event === 'Confidential Note Hook' || event === 'Note Hook') {
    event = `${event} ${str(p, 'object_attributes', 'noteable_type')}`;
  } else if (event === 'Push Hook' && branches !== undefined) {
    // Zulip tests the branch list by substring.
    if (!branches.includes(branchName(p))) return null;
  }
  if (Object.hasOwn(EVENT_BODIES, event)) return event;
  throw new UnsupportedEventError(event);
}

function topicFor(event: string, p: unknown, useMrTitle: boolean): string {
  if (event === 'Push Hook') return `${repoName(p)} / ${branchName(p)}`;
  if (event === 'Job Hook' || event === 'Build Hook') return `${str(p, 'repository', 'name')} / ${branchName(p)}`;
  if (event === 'Pipeline Hook') return `${repoName(p)} / ${str(p, 'object_attributes', 'ref').replace('refs/heads/', '')}`;
  if (event.startsWith('Merge Request Hook')) return topicWithPrOrIssueInfo(repoName(p), 'MR', num(p, 'object_attributes', 'iid'), useMrTitle ? str(p, 'object_attributes', 'title') : '');
  if (event.startsWith('Issue Hook') || event.startsWith('Confidential Issue Hook')) return topicWithPrOrIssueInfo(repoName(p), 'issue', num(p, 'object_attributes', 'iid'), str(p, 'object_attributes', 'title'));
  if (event === 'Note Hook Issue' || event === 'Confidential Note Hook Issue') return topicWithPrOrIssueInfo(repoName(p), 'issue', num(p, 'issue', 'iid'), str(p, 'issue', 'title'));
  if (event === 'Note Hook MergeRequest') return topicWithPrOrIssueInfo(repoName(p), 'MR', num(p, 'merge_request', 'iid'), useMrTitle ? str(p, 'merge_request', 'title') : '');
  if (event === 'Note Hook Snippet') return topicWithPrOrIssueInfo(repoName(p), 'snippet', num(p, 'snippet', 'id'), str(p, 'snippet', 'title'));
  return repoName(p);
}

function jsonBool(raw: string | undefined, name: string, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new JsonableError(`${name} is not a boolean`, 'BAD_REQUEST', 400);
}

export const gitlabIntegration: Integration = {
  name: 'gitlab',
  webhookName: 'GitLab',
  jsonBody: true,
  handle(req) {
    const useMrTitle = jsonBool(req.query.use_merge_request_title, 'use_merge_request_title', true);
    const event = zulipEvent(requireHeader(req.headers, 'X-GitLab-Event'), req.payload, req.query.branches);
    if (event === null) return [];
    const p = req.payload;
    const includeTitle = req.query.topic !== undefined;
    let body = EVENT_BODIES[event]!(p, includeTitle);
    if (req.query.topic) body = `[[${repoName(p)}](${projectHomepage(p)})] ${body}`;
    return [{ topic: topicFor(event, p, useMrTitle), body, eventType: event }];
  },
};
