import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'integrations');

/** A fixture's text: test/fixtures/integrations/<integration>/<name>. */
export function fixture(integration: string, name: string): string {
  return readFileSync(join(FIXTURES, integration, name), 'utf8');
}

/**
 * Zulip's tests expect "(no topic)"; its send path (and ours) stores that name as the empty
 * topic, which GET /messages returns as "" with allow_empty_topic_name.
 */
const NO_TOPIC = '';

export interface IntegrationCase {
  integration: string;
  fixture: string;
  contentType?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  /** The sending client Zulip records: Zulip<webhook name>Webhook. */
  client: string;
  /** Zulip's expected_topic_name and expected_message in zerver/webhooks/<name>/tests.py. */
  topic: string;
  content: string;
}

/**
 * Each payload is from Zulip's own test fixtures (zerver/webhooks/<name>/fixtures/), or from the
 * service's documentation, with the topic and content Zulip's tests expect for it.
 */
export const INTEGRATION_CASES: IntegrationCase[] = [
  {
    integration: 'json',
    fixture: 'pingdom_http_up_to_down.json',
    client: 'ZulipJSONWebhook',
    topic: 'JSON',
    // Zulip's tests build the expectation with Python's json.dumps(fixture, indent=2); this file is its output.
    content: fixture('json', 'pingdom_http_up_to_down.expected.md'),
  },
  { integration: 'slack_incoming', fixture: 'text.json', client: 'ZulipSlackIncomingWebhook', topic: NO_TOPIC, content: 'Hello, world.' },
  {
    integration: 'slack_incoming',
    fixture: 'urlencoded_text.txt',
    contentType: 'application/x-www-form-urlencoded',
    client: 'ZulipSlackIncomingWebhook',
    topic: 'devops',
    content: ':zap: chris has started deploying project tag v0.0.2rc10 to staging',
  },
  {
    integration: 'slack_incoming',
    fixture: 'blocks.json',
    client: 'ZulipSlackIncomingWebhook',
    topic: NO_TOPIC,
    content:
      'Danny Torrence left the following review for your property:\n\n[Overlook Hotel](https://example.com) \n :star: \n Doors had too many axe holes, guest in room 237 was far too rowdy, whole place felt stuck in the 1920s.\n\n[Haunted hotel image](https://is5-ssl.mzstatic.com/image/thumb/Purple3/v4/d3/72/5c/d3725c8f-c642-5d69-1904-aa36e4297885/source/256x256bb.jpg)\n\n**Average Rating**\n1.0',
  },
  {
    integration: 'slack_incoming',
    fixture: 'attachment_fields.json',
    client: 'ZulipSlackIncomingWebhook',
    topic: NO_TOPIC,
    content:
      'Build bla bla succeeded\n\n**Requested by**: Some user\n**Duration**: 00:02:03\n**Build pipeline**: ConsumerAddressModule\n**Title without value**\nValue without title',
  },
  {
    integration: 'github',
    fixture: 'ping__organization.json',
    headers: { 'X-GitHub-Event': 'ping' },
    client: 'ZulipGitHubWebhook',
    topic: 'zulip-test-org',
    content: 'GitHub webhook has been successfully configured by eeshangarg.',
  },
  {
    integration: 'github',
    fixture: 'push__force_1_commit.json',
    headers: { 'X-GitHub-Event': 'push' },
    client: 'ZulipGitHubWebhook',
    topic: 'zulip / temp',
    content:
      'sbansal1999 [force pushed](https://github.com/sbansal1999/zulip/compare/b6de8891fc10...971d76ca3094) 1 commit to branch temp.\n\n* log: Add important.txt which is useful for logging errors. ([971d76ca309](https://github.com/sbansal1999/zulip/commit/971d76ca309446a9c20381f6271cea8a59b4e40a))',
  },
  {
    integration: 'github',
    fixture: 'issues.json',
    headers: { 'X-GitHub-Event': 'issues' },
    client: 'ZulipGitHubWebhook',
    topic: 'public-repo / issue #2 Spelling error in the README file',
    content:
      "baxterthehacker opened [issue #2](https://github.com/baxterthehacker/public-repo/issues/2):\n\n~~~ quote\nIt looks like you accidentally spelled 'commit' with two 't's.\n~~~",
  },
  {
    integration: 'github',
    fixture: 'issues.json',
    headers: { 'X-GitHub-Event': 'issues' },
    query: { topic: 'notifications' },
    client: 'ZulipGitHubWebhook',
    topic: 'notifications',
    content:
      "baxterthehacker opened [issue #2 Spelling error in the README file](https://github.com/baxterthehacker/public-repo/issues/2):\n\n~~~ quote\nIt looks like you accidentally spelled 'commit' with two 't's.\n~~~",
  },
  {
    integration: 'github',
    fixture: 'issue_comment.json',
    headers: { 'X-GitHub-Event': 'issue_comment' },
    client: 'ZulipGitHubWebhook',
    topic: 'public-repo / issue #2 Spelling error in the README file',
    content:
      "baxterthehacker [commented](https://github.com/baxterthehacker/public-repo/issues/2#issuecomment-99262140) on [issue #2](https://github.com/baxterthehacker/public-repo/issues/2):\n\n~~~ quote\nYou are totally right! I'll get this fixed right away.\n~~~",
  },
  {
    integration: 'github',
    fixture: 'pull_request__opened.json',
    headers: { 'X-GitHub-Event': 'pull_request' },
    client: 'ZulipGitHubWebhook',
    topic: 'public-repo / PR #1 Update the README with new information',
    content:
      'baxterthehacker opened [PR #1](https://github.com/baxterthehacker/public-repo/pull/1) from `baxterthehacker:changes` to `baxterthehacker:master`:\n\n~~~ quote\nThis is a pretty simple change that we need to pull into master.\n~~~',
  },
  {
    integration: 'github',
    fixture: 'pull_request__closed.json',
    headers: { 'X-GitHub-Event': 'pull_request' },
    query: { topic: 'notifications' },
    client: 'ZulipGitHubWebhook',
    topic: 'notifications',
    content: 'baxterthehacker closed without merge [PR #1 Update the README with new information](https://github.com/baxterthehacker/public-repo/pull/1).',
  },
  {
    integration: 'alertmanager',
    fixture: 'alert.json',
    query: { name: 'topic', desc: 'description' },
    client: 'ZulipAlertmanagerWebhook',
    topic: 'andromeda',
    content:
      ':alert: **FIRING**\n* CPU core temperature is 34.75C ([source](http://cobalt:9090/graph?g0.expr=avg+by%28host%29+%28sensors_temp_input%7Bfeature%3D~%22core_%5B0-9%5D%2B%22%7D%29+%3E+15&g0.tab=0))\n* CPU core temperature is 17.625C ([source](http://cobalt:9090/graph?g0.expr=avg+by%28host%29+%28sensors_temp_input%7Bfeature%3D~%22core_%5B0-9%5D%2B%22%7D%29+%3E+15&g0.tab=0))',
  },
  {
    integration: 'alertmanager',
    fixture: 'single_alert.json',
    query: { name: 'topic', desc: 'description' },
    client: 'ZulipAlertmanagerWebhook',
    topic: 'andromeda',
    content:
      ':squared_ok: **Resolved** CPU core temperature is 34.75C ([source](http://cobalt:9090/graph?g0.expr=avg+by%28host%29+%28sensors_temp_input%7Bfeature%3D~%22core_%5B0-9%5D%2B%22%7D%29+%3E+15&g0.tab=0))',
  },
  {
    integration: 'grafana',
    fixture: 'alert_new.json',
    contentType: 'application/x-www-form-urlencoded',
    client: 'ZulipGrafanaWebhook',
    topic: '[RESOLVED:1]',
    content:
      ':checkbox: **RESOLVED**\n\nWebhook test message.\n\n---\n**Alert 1**: TestAlert.\n\nThis alert was fired at <time:2022-08-31T05:54:04.52289368Z>.\n\nThis alert was resolved at <time:2022-08-31T10:30:00.52288431Z>.\n\nLabels:\n- alertname: TestAlert\n- instance: Grafana\n\nAnnotations:\n- summary: Notification test\n\n1 alert(s) truncated.',
  },
  {
    integration: 'grafana',
    fixture: 'alert.json',
    contentType: 'application/x-www-form-urlencoded',
    client: 'ZulipGrafanaWebhook',
    topic: '[Alerting] Test notification',
    content:
      ':alert: **ALERTING**\n\n[Test rule](http://localhost:3000/)\n\nSomeone is testing the alert notification within grafana.\n\n**High value:** 100\n**Higher Value:** 200\n\n[Click to view visualization](https://grafana.com/assets/img/blog/mixed_styles.png)',
  },
  {
    integration: 'sentry',
    fixture: 'issue_created_for_exception.json',
    client: 'ZulipSentryWebhook',
    topic: 'Exception: Custom exception!',
    content: '**New issue created:** Exception: Custom exception!\n```quote\n**level:** error\n**timestamp:** 2020-04-28 13:56:05\n**assignee:** No one\n```',
  },
  {
    integration: 'sentry',
    fixture: 'issue_assigned_to_team.json',
    client: 'ZulipSentryWebhook',
    topic: 'Exception: program has entered an invalid state.',
    content: 'Issue **Exception: program has entered an invalid state.** has now been assigned to **team lone-wolf** by **Hemanth V. Alluri**.',
  },
  {
    integration: 'gitlab',
    fixture: 'push_hook.json',
    headers: { 'X-GitLab-Event': 'Push Hook' },
    client: 'ZulipGitLabWebhook',
    topic: 'my-awesome-project / tomek',
    content:
      'Tomasz Kolek [pushed](https://gitlab.com/tomaszkolek0/my-awesome-project/-/compare/5fcdd5551fc3085df79bece2c32b1400802ac407...eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9) 2 commits to branch tomek.\n\n* b ([66abd2da288](https://gitlab.com/tomaszkolek0/my-awesome-project/commit/66abd2da28809ffa128ed0447965cf11d7f863a7))\n* c ([eb6ae1e591e](https://gitlab.com/tomaszkolek0/my-awesome-project/commit/eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9))',
  },
  {
    integration: 'gitlab',
    fixture: 'push_hook.json',
    headers: { 'X-GitLab-Event': 'Push Hook' },
    query: { topic: 'Specific topic' },
    client: 'ZulipGitLabWebhook',
    topic: 'Specific topic',
    content:
      '[[my-awesome-project](https://gitlab.com/tomaszkolek0/my-awesome-project)] Tomasz Kolek [pushed](https://gitlab.com/tomaszkolek0/my-awesome-project/-/compare/5fcdd5551fc3085df79bece2c32b1400802ac407...eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9) 2 commits to branch tomek.\n\n* b ([66abd2da288](https://gitlab.com/tomaszkolek0/my-awesome-project/commit/66abd2da28809ffa128ed0447965cf11d7f863a7))\n* c ([eb6ae1e591e](https://gitlab.com/tomaszkolek0/my-awesome-project/commit/eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9))',
  },
  {
    integration: 'gitlab',
    fixture: 'issue_hook__issue_created_with_assignee.json',
    headers: { 'X-GitLab-Event': 'Issue Hook' },
    client: 'ZulipGitLabWebhook',
    topic: 'my-awesome-project / issue #1 Issue title',
    content: 'Tomasz Kolek created [issue #1](https://gitlab.com/tomaszkolek0/my-awesome-project/issues/1) (assigned to Tomasz Kolek):\n\n~~~ quote\nIssue description\n~~~',
  },
  {
    integration: 'gitlab',
    fixture: 'issue_hook__issue_closed.json',
    headers: { 'X-GitLab-Event': 'Issue Hook' },
    client: 'ZulipGitLabWebhook',
    topic: 'my-awesome-project / issue #1 Issue title_new',
    content: 'Tomasz Kolek closed [issue #1](https://gitlab.com/tomaszkolek0/my-awesome-project/issues/1).',
  },
  {
    integration: 'gitlab',
    fixture: 'merge_request_hook__merge_request_created_without_assignee.json',
    headers: { 'X-GitLab-Event': 'Merge Request Hook' },
    client: 'ZulipGitLabWebhook',
    topic: 'my-awesome-project / MR #2 NEW MR',
    content: 'Tomasz Kolek created [MR #2](https://gitlab.com/tomaszkolek0/my-awesome-project/merge_requests/2) from `tomek` to `master`:\n\n~~~ quote\ndescription of merge request\n~~~',
  },
  {
    integration: 'gitlab',
    fixture: 'merge_request_hook__merge_request_closed.json',
    headers: { 'X-GitLab-Event': 'Merge Request Hook' },
    query: { use_merge_request_title: 'false' },
    client: 'ZulipGitLabWebhook',
    topic: 'my-awesome-project / MR #2',
    content: 'Tomasz Kolek closed [MR #2](https://gitlab.com/tomaszkolek0/my-awesome-project/merge_requests/2).',
  },
  {
    integration: 'jira',
    fixture: 'created_v2.json',
    client: 'ZulipJiraWebhook',
    topic: 'BUG-15: New bug with hook',
    content: 'Leo Franchi created [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15):\n\n* **Priority**: Major\n* **Assignee**: no one',
  },
  {
    integration: 'jira',
    fixture: 'created_v2.json',
    // Jira double-encodes the URL's parameters; Zulip decodes them once more.
    query: { topic: 'alerts%20test' },
    client: 'ZulipJiraWebhook',
    topic: 'alerts test',
    content: 'Leo Franchi created [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15):\n\n* **Priority**: Major\n* **Assignee**: no one',
  },
  {
    integration: 'jira',
    fixture: 'commented_v2.json',
    client: 'ZulipJiraWebhook',
    topic: 'BUG-15: New bug with hook',
    // The assignee's email is a Zulip user's (created by the test), named as in Zulip.
    content:
      'Leo Franchi commented on [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15) (assigned to **Othello, the Moor of Venice**):\n\n``` quote\nAdding a comment. Oh, what a comment it is!\n```',
  },
  {
    integration: 'jira',
    fixture: 'updated_status_v2.json',
    client: 'ZulipJiraWebhook',
    topic: 'BUG-15: New bug with hook',
    content: 'Leo Franchi updated [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15):\n\n* Changed status from **Open** to **In Progress**',
  },
  {
    integration: 'ifttt',
    fixture: 'correct_topic_and_body.json',
    client: 'ZulipIFTTTWebhook',
    topic: 'Email sent from email@email.com',
    content: 'Email subject: Subject',
  },
  {
    integration: 'ifttt',
    fixture: 'correct_subject_and_body.json',
    client: 'ZulipIFTTTWebhook',
    topic: 'Email sent from email@email.com',
    content: 'Email subject: Subject',
  },
];
