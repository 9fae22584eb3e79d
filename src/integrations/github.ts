import { AnomalousPayloadError, UnsupportedEventError, bool, field, has, list, num, optStr, requireHeader, str, truthy, type Integration } from './types.js';
import {
  contentMessage,
  getCommitsCommentActionMessage,
  getPullRequestEventMessage,
  getPushCommitsEventMessage,
  getPushTagEventMessage,
  getSetupWebhookMessage,
  getShortSha,
  topicWithBranch,
  topicWithPrOrIssueInfo,
  type CommitData,
} from './git.js';

/**
 * GitHub (Zulip's zerver/webhooks/github): the event is the X-GitHub-Event header, refined by
 * the payload's action into Zulip's event names (which `only_events` / `exclude_events` match).
 * A `topic` in the URL puts the PR or issue title into the message instead of the topic.
 */

interface Helper {
  payload: unknown;
  includeTitle: boolean;
}

const sender = (p: unknown): string => str(p, 'sender', 'login');
const senderUrl = (p: unknown): string => str(p, 'sender', 'html_url');
const repoName = (p: unknown): string => str(p, 'repository', 'name');
const repoFullName = (p: unknown): string => str(p, 'repository', 'full_name');
const branchFromRef = (ref: string): string => ref.replace(/^refs\/heads\//, '');
const tagFromRef = (ref: string): string => ref.replace(/^refs\/tags\//, '');
const isPullRequestComment = (p: unknown): boolean => has(field(p, 'issue'), 'pull_request');
const titleIf = (h: Helper, ...path: string[]): string | null => (h.includeTitle ? str(h.payload, ...path) : null);

function commentAction(p: unknown): string {
  const action = str(p, 'action');
  const verb = action === 'created' ? '[commented]' : `${action} a [comment]`;
  return `${verb}(${str(p, 'comment', 'html_url')}) on`;
}

function openedOrUpdatedPullRequest(h: Helper): string {
  const p = h.payload;
  let action = str(p, 'action');
  if (action === 'synchronize') action = 'updated';
  const pr = field(p, 'pull_request');
  const assignee = truthy(field(pr, 'assignee')) ? str(pr, 'assignee', 'login') : null;
  const changes = field(p, 'changes') ?? {};
  const description = has(changes, 'body') || action === 'opened' ? optStr(pr, 'body') ?? null : null;
  const branches = action === 'opened' || action === 'merged';
  return getPullRequestEventMessage({
    userName: sender(p),
    action,
    url: str(pr, 'html_url'),
    targetBranch: branches ? str(pr, 'head', 'label') : null,
    baseBranch: branches ? str(pr, 'base', 'label') : null,
    message: description,
    assignee,
    number: num(pr, 'number'),
    title: titleIf(h, 'pull_request', 'title'),
  });
}

function assignedOrUnassignedPullRequest(h: Helper): string {
  const p = h.payload;
  const pr = field(p, 'pull_request');
  const base = getPullRequestEventMessage({ userName: sender(p), action: str(p, 'action'), url: str(pr, 'html_url'), number: num(pr, 'number'), title: titleIf(h, 'pull_request', 'title') });
  if (truthy(field(pr, 'assignee'))) return base.replace('assigned', `assigned ${str(pr, 'assignee', 'login')} to`);
  return base;
}

function closedPullRequest(h: Helper): string {
  const p = h.payload;
  const pr = field(p, 'pull_request');
  return getPullRequestEventMessage({
    userName: sender(p),
    action: bool(pr, 'merged') ? 'merged' : 'closed without merge',
    url: str(pr, 'html_url'),
    number: num(pr, 'number'),
    title: titleIf(h, 'pull_request', 'title'),
  });
}

function issueBody(h: Helper): string {
  const p = h.payload;
  const action = str(p, 'action');
  const issue = field(p, 'issue');
  const base = getPullRequestEventMessage({
    userName: sender(p),
    action,
    url: str(issue, 'html_url'),
    number: num(issue, 'number'),
    message: action === 'assigned' || action === 'unassigned' ? null : optStr(issue, 'body') ?? null,
    title: titleIf(h, 'issue', 'title'),
    type: 'issue',
  });
  if (has(p, 'assignee')) {
    const assignee = str(p, 'assignee', 'login');
    if (action === 'assigned') return base.replace('assigned', `assigned ${assignee} to`);
    if (action === 'unassigned') return base.replace('unassigned', `unassigned ${assignee} from`);
  }
  return base;
}

function issueCommentBody(h: Helper): string {
  const p = h.payload;
  const issue = field(p, 'issue');
  return getPullRequestEventMessage({
    userName: sender(p),
    action: commentAction(p),
    url: str(issue, 'html_url'),
    number: num(issue, 'number'),
    message: str(p, 'comment', 'body'),
    title: titleIf(h, 'issue', 'title'),
    type: isPullRequestComment(p) ? 'PR' : 'issue',
  });
}

function issueLabeledBody(h: Helper): string {
  const p = h.payload;
  const added = str(p, 'action') === 'labeled';
  const issue = field(p, 'issue');
  const title = titleIf(h, 'issue', 'title');
  const target = `[Issue #${num(issue, 'number')}${title !== null ? ` ${title}` : ''}](${str(issue, 'html_url')})`;
  return `[${sender(p)}](${senderUrl(p)}) ${added ? 'added' : 'removed'} the ${str(p, 'label', 'name')} label ${added ? 'to' : 'from'} ${target}.`;
}

function issueMilestonedBody(h: Helper): string {
  const p = h.payload;
  const added = str(p, 'action') === 'milestoned';
  const issue = field(p, 'issue');
  const title = titleIf(h, 'issue', 'title');
  const target = `[issue #${num(issue, 'number')}${title !== null ? ` ${title}` : ''}](${str(issue, 'html_url')})`;
  return `[${sender(p)}](${senderUrl(p)}) ${added ? 'added' : 'removed'} milestone [${str(p, 'milestone', 'title')}](${str(p, 'milestone', 'html_url')}) ${added ? 'to' : 'from'} ${target}.`;
}

function pushCommitsBody(h: Helper): string {
  const p = h.payload;
  const commits: CommitData[] = list(p, 'commits').map((c) => ({
    name: truthy(field(c, 'author', 'username')) ? str(c, 'author', 'username') : str(c, 'author', 'name'),
    sha: str(c, 'id'),
    url: str(c, 'url'),
    message: str(c, 'message'),
  }));
  return getPushCommitsEventMessage({
    userName: sender(p),
    compareUrl: str(p, 'compare'),
    branchName: branchFromRef(str(p, 'ref')),
    commits,
    deleted: bool(p, 'deleted'),
    forcePush: bool(p, 'forced'),
  });
}

function commitCommentBody(h: Helper): string {
  const p = h.payload;
  const commentUrl = str(p, 'comment', 'html_url');
  return getCommitsCommentActionMessage(sender(p), `[commented](${commentUrl})`, commentUrl.split('#', 1)[0]!, str(p, 'comment', 'commit_id'), str(p, 'comment', 'body'));
}

function releaseBody(h: Helper): string {
  const p = h.payload;
  const name = truthy(field(p, 'release', 'name')) ? str(p, 'release', 'name') : str(p, 'release', 'tag_name');
  return `${sender(p)} ${str(p, 'action')} release [${name}](${str(p, 'release', 'html_url')}) for tag ${str(p, 'release', 'tag_name')}.`;
}

function pageBuildBody(h: Helper): string {
  const p = h.payload;
  const status = str(p, 'build', 'status');
  const actions: Record<string, string> = { null: 'has yet to be built', building: 'is being built', errored: 'has failed: {}', built: 'has finished building' };
  let action = actions[status] ?? `is ${status}`;
  if (truthy(field(p, 'build', 'error', 'message'))) action = action.replace('{}', contentMessage(str(p, 'build', 'error', 'message')));
  return `GitHub Pages build, triggered by ${str(p, 'build', 'pusher', 'login')}, ${action}.`;
}

function statusBody(h: Helper): string {
  const p = h.payload;
  const state = str(p, 'state');
  const status = truthy(field(p, 'target_url')) ? `[${state}](${str(p, 'target_url')})` : state;
  return `[${getShortSha(str(p, 'sha'))}](${str(p, 'commit', 'html_url')}) changed its status to ${status}.`;
}

function teamBody(h: Helper): string {
  const p = h.payload;
  const changes = field(p, 'changes');
  if (has(changes, 'description')) return `**${sender(p)}** changed the team description to:\n\n~~~ quote\n${str(p, 'team', 'description')}\n~~~`;
  if (has(changes, 'name')) return `Team \`${str(changes, 'name', 'from')}\` was renamed to \`${str(p, 'team', 'name')}\`.`;
  if (has(changes, 'privacy')) return `Team visibility changed to \`${str(p, 'team', 'privacy')}\``;
  const keys = Object.keys((changes ?? {}) as object).sort().join('/');
  return `Team has changes to \`${keys}\` data.`;
}

function reviewRequestedBody(h: Helper): string {
  const p = h.payload;
  const reviewers = has(p, 'requested_reviewer')
    ? `[${str(p, 'requested_reviewer', 'login')}](${str(p, 'requested_reviewer', 'html_url')})`
    : `[${str(p, 'requested_team', 'name')}](${str(p, 'requested_team', 'html_url')})`;
  const title = h.includeTitle ? ` ${str(p, 'pull_request', 'title')}` : '';
  return `**${sender(p)}** requested ${reviewers} for a review on [PR #${num(p, 'pull_request', 'number')}${title}](${str(p, 'pull_request', 'html_url')}).`;
}

const prLink = (p: unknown): string => `[PR #${num(p, 'pull_request', 'number')}](${str(p, 'pull_request', 'html_url')})`;

const EVENT_BODIES: Record<string, (h: Helper) => string> = {
  commit_comment: commitCommentBody,
  closed_pull_request: closedPullRequest,
  create: ({ payload: p }) => `${sender(p)} created ${str(p, 'ref_type')} ${str(p, 'ref')}.`.trimEnd(),
  check_run: ({ payload: p }) =>
    `Check [${str(p, 'check_run', 'name')}](${str(p, 'check_run', 'html_url')}) ${str(p, 'check_run', 'status')} (${str(p, 'check_run', 'conclusion')}). ([${getShortSha(str(p, 'check_run', 'head_sha'))}](${str(p, 'repository', 'html_url')}/commit/${str(p, 'check_run', 'head_sha')}))`,
  delete: ({ payload: p }) => `${sender(p)} deleted ${str(p, 'ref_type')} ${str(p, 'ref')}.`.trimEnd(),
  deployment: ({ payload: p }) => `${sender(p)} created new deployment.`,
  deployment_status: ({ payload: p }) => `Deployment changed status to ${str(p, 'deployment_status', 'state')}.`,
  discussion: ({ payload: p }) =>
    `${sender(p)} created [discussion #${num(p, 'discussion', 'number')}](${str(p, 'discussion', 'html_url')}) in ${str(p, 'discussion', 'category', 'name')}:\n\n~~~ quote\n### ${str(p, 'discussion', 'title')}\n${str(p, 'discussion', 'body')}\n~~~`,
  discussion_comment: (h) =>
    getPullRequestEventMessage({
      userName: sender(h.payload),
      action: commentAction(h.payload),
      url: str(h.payload, 'discussion', 'html_url'),
      number: num(h.payload, 'discussion', 'number'),
      message: str(h.payload, 'comment', 'body'),
      title: titleIf(h, 'discussion', 'title'),
      type: 'discussion',
    }),
  fork: ({ payload: p }) => `${sender(p)} forked [${str(p, 'forkee', 'name')}](${str(p, 'forkee', 'html_url')}).`,
  gollum: ({ payload: p }) => {
    const pages = list(p, 'pages').map((page) => `* ${str(page, 'action')} [${str(page, 'title')}](${str(page, 'html_url')})\n`).join('');
    return `${sender(p)}:\n${pages.trimEnd()}`;
  },
  issue_comment: issueCommentBody,
  issue_labeled_or_unlabeled: issueLabeledBody,
  issue_milestoned_or_demilestoned: issueMilestonedBody,
  issues: issueBody,
  member: ({ payload: p }) =>
    `${sender(p)} ${str(p, 'action')} [${str(p, 'member', 'login')}](${str(p, 'member', 'html_url')}) to [${repoName(p)}](${str(p, 'repository', 'html_url')}).`,
  membership: ({ payload: p }) => {
    const action = str(p, 'action');
    return `${sender(p)} ${action} [${str(p, 'member', 'login')}](${str(p, 'member', 'html_url')}) ${action === 'removed' ? 'from' : 'to'} the ${str(p, 'team', 'name')} team.`;
  },
  opened_pull_request: openedOrUpdatedPullRequest,
  updated_pull_request: openedOrUpdatedPullRequest,
  assigned_or_unassigned_pull_request: assignedOrUnassignedPullRequest,
  page_build: pageBuildBody,
  ping: ({ payload: p }) => getSetupWebhookMessage('GitHub', sender(p)),
  public: ({ payload: p }) => `${sender(p)} made the repository [${repoFullName(p)}](${str(p, 'repository', 'html_url')}) public.`,
  pull_request_ready_for_review: ({ payload: p }) => `**${sender(p)}** has marked ${prLink(p)} as ready for review.`,
  pull_request_review: (h) =>
    getPullRequestEventMessage({
      userName: sender(h.payload),
      action: 'submitted',
      url: str(h.payload, 'review', 'html_url'),
      type: 'PR review',
      title: h.includeTitle ? `for #${num(h.payload, 'pull_request', 'number')} ${str(h.payload, 'pull_request', 'title')}` : null,
      message: optStr(h.payload, 'review', 'body') ?? null,
    }),
  pull_request_review_comment: (h) => {
    const action = str(h.payload, 'action');
    return getPullRequestEventMessage({
      userName: sender(h.payload),
      action,
      url: str(h.payload, 'comment', 'html_url'),
      message: action === 'created' ? str(h.payload, 'comment', 'body') : null,
      type: 'PR review comment',
      title: h.includeTitle ? `on #${num(h.payload, 'pull_request', 'number')} ${str(h.payload, 'pull_request', 'title')}` : null,
    });
  },
  pull_request_review_requested: reviewRequestedBody,
  pull_request_auto_merge: ({ payload: p }) =>
    `${sender(p)} has ${str(p, 'action') === 'auto_merge_disabled' ? 'disabled' : 'enabled'} auto merge for ${prLink(p)}.`,
  locked_or_unlocked_pull_request: ({ payload: p }) => {
    if (str(p, 'action') === 'unlocked') return `${sender(p)} has unlocked ${prLink(p)}.`;
    const reason = truthy(field(p, 'pull_request', 'active_lock_reason')) ? str(p, 'pull_request', 'active_lock_reason') : 'None';
    return `${sender(p)} has locked ${prLink(p)} as ${reason} and limited conversation to collaborators.`;
  },
  push_commits: pushCommitsBody,
  push_tags: ({ payload: p }) => getPushTagEventMessage(sender(p), tagFromRef(str(p, 'ref')), null, bool(p, 'created') ? 'pushed' : 'removed'),
  release: releaseBody,
  repository: ({ payload: p }) => `${sender(p)} ${str(p, 'action')} the repository [${repoFullName(p)}](${str(p, 'repository', 'html_url')}).`,
  star: ({ payload: p }) =>
    `[${sender(p)}](${senderUrl(p)}) ${str(p, 'action') === 'created' ? 'starred' : 'unstarred'} the repository [${repoFullName(p)}](${str(p, 'repository', 'html_url')}).`,
  status: statusBody,
  team: teamBody,
  team_add: ({ payload: p }) => `The repository [${repoFullName(p)}](${str(p, 'repository', 'html_url')}) was added to team ${str(p, 'team', 'name')}.`,
  watch: ({ payload: p }) => `${sender(p)} starred the repository [${repoFullName(p)}](${str(p, 'repository', 'html_url')}).`,
};

const IGNORED_EVENTS = ['check_suite', 'label', 'meta', 'milestone', 'organization', 'project_card', 'push__merge_queue', 'repository_vulnerability_alert'];
const IGNORED_PULL_REQUEST_ACTIONS = ['approved', 'converted_to_draft', 'labeled', 'review_request_removed', 'unlabeled'];
const IGNORED_TEAM_ACTIONS = ['added_to_repository', 'created', 'deleted', 'removed_from_repository'];

/** Zulip's get_zulip_event_name: null for events Zulip deliberately ignores. */
function zulipEventName(header: string, p: unknown, branches: string | undefined): string | null {
  if (header === 'pull_request') {
    const action = str(p, 'action');
    if (action === 'opened' || action === 'reopened') return 'opened_pull_request';
    if (action === 'synchronize' || action === 'edited') return 'updated_pull_request';
    if (action === 'assigned' || action === 'unassigned') return 'assigned_or_unassigned_pull_request';
    if (action === 'closed') return 'closed_pull_request';
    if (action === 'review_requested') return 'pull_request_review_requested';
    if (action === 'ready_for_review') return 'pull_request_ready_for_review';
    if (action === 'locked' || action === 'unlocked') return 'locked_or_unlocked_pull_request';
    if (action === 'auto_merge_enabled' || action === 'auto_merge_disabled') return 'pull_request_auto_merge';
    if (IGNORED_PULL_REQUEST_ACTIONS.includes(action)) return null;
  } else if (header === 'push') {
    const ref = str(p, 'ref');
    if (ref.startsWith('refs/heads/gh-readonly-queue/')) return null;
    if (ref.startsWith('refs/heads/')) {
      // Zulip tests the branch list by substring, so "master,changes" also matches "change".
      if (branches !== undefined && !branches.includes(branchFromRef(ref))) return null;
      return 'push_commits';
    }
    return 'push_tags';
  } else if (header === 'check_run') {
    return str(p, 'check_run', 'status') === 'completed' ? header : null;
  } else if (header === 'team') {
    const action = str(p, 'action');
    if (action === 'edited') return 'team';
    if (IGNORED_TEAM_ACTIONS.includes(action)) return null;
    throw new UnsupportedEventError(`unsupported team action ${action}`);
  } else if (header === 'issues') {
    const action = str(p, 'action');
    if (action === 'labeled' || action === 'unlabeled') return 'issue_labeled_or_unlabeled';
    if (action === 'milestoned' || action === 'demilestoned') return 'issue_milestoned_or_demilestoned';
    return 'issues';
  } else if (Object.hasOwn(EVENT_BODIES, header)) {
    return header;
  } else if (IGNORED_EVENTS.includes(header)) {
    return null;
  }
  const action = field(p, 'action') ?? '???';
  if (typeof action !== 'string') throw new AnomalousPayloadError();
  throw new UnsupportedEventError(`${header}:${action}`);
}

function topicFor(p: unknown, event: string): string {
  if (event.includes('pull_request')) return topicWithPrOrIssueInfo(repoName(p), 'PR', num(p, 'pull_request', 'number'), str(p, 'pull_request', 'title'));
  if (event.startsWith('issue')) return topicWithPrOrIssueInfo(repoName(p), isPullRequestComment(p) ? 'PR' : 'issue', num(p, 'issue', 'number'), str(p, 'issue', 'title'));
  if (event.startsWith('deployment')) return `${repoName(p)} / Deployment on ${str(p, 'deployment', 'environment')}`;
  if (event === 'membership') return `${str(p, 'organization', 'login')} organization`;
  if (event === 'team') return `team ${str(p, 'team', 'name')}`;
  if (event === 'push_commits') return topicWithBranch(repoName(p), branchFromRef(str(p, 'ref')));
  if (event === 'gollum') return topicWithBranch(repoName(p), 'wiki pages');
  if (event === 'ping' && !truthy(field(p, 'repository'))) return str(p, 'organization', 'login');
  if (event === 'check_run') return `${repoName(p)} / checks`;
  if (event.startsWith('discussion')) return `${repoName(p)} discussion #${num(p, 'discussion', 'number')}: ${str(p, 'discussion', 'title')}`;
  return repoName(p);
}

export const githubIntegration: Integration = {
  name: 'github',
  webhookName: 'GitHub',
  jsonBody: true,
  handle(req) {
    const header = requireHeader(req.headers, 'X-GitHub-Event');
    const event = zulipEventName(header, req.payload, req.query.branches);
    if (event === null) return [];
    const body = EVENT_BODIES[event]!({ payload: req.payload, includeTitle: req.query.topic !== undefined });
    return [{ topic: topicFor(req.payload, event), body, eventType: event }];
  },
};
