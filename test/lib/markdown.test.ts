import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderMarkdown, type MarkdownContext } from '../../src/lib/markdown/index.js';

// Zulip's own rendering fixtures (markdown_test_cases.json), run against our renderer.

const FIXTURES = resolve(process.cwd(), '../shared/zulip-api/markdown_test_cases.json');

// The pass counts this renderer reached; a change that renders fewer cases like Zulip fails.
// KaTeX is pinned to 0.16.40, whose rounding matches the fixtures; the one regular case still
// failing (tex_safe_script_tag) expects markup from another KaTeX release.
const REGULAR_FLOOR = 174;
const LINKIFY_FLOOR = 73;

interface RegularCase {
  name: string;
  input: string;
  expected_output: string;
  translate_emoticons?: boolean;
  ignore?: boolean;
}

interface Fixtures {
  regular_tests: RegularCase[];
  linkify_tests: [string, string, string][];
}

// The realm the fixtures were generated in (Zulip's test server and its seeded cast).
const ZULIP_TEST_REALM: MarkdownContext = {
  realmUrl: 'http://zulip.testserver',
  users: [
    { id: 8, fullName: "Cordelia, Lear's daughter", isActive: true },
    { id: 10, fullName: 'King Hamlet', isActive: true },
    { id: 12, fullName: 'Iago', isActive: true },
    { id: 13, fullName: 'Othello, the Moor of Venice', isActive: true },
  ],
  groups: [{ id: 2, name: 'hamletcharacters', deactivated: false }],
  channels: [
    { id: 1, name: 'Denmark' },
    { id: 3, name: 'Verona' },
    { id: 4, name: 'Scotland' },
  ],
};

const fixtures: Fixtures | undefined = existsSync(FIXTURES)
  ? (JSON.parse(readFileSync(FIXTURES, 'utf8')) as Fixtures)
  : undefined;
const skip = fixtures ? false : `no Zulip fixtures at ${FIXTURES}`;

test('Zulip markdown_test_cases.json: regular cases', { skip }, () => {
  const cases = fixtures!.regular_tests.filter((c) => !c.ignore);
  const failing: string[] = [];
  for (const c of cases) {
    const { html } = renderMarkdown(c.input, { ...ZULIP_TEST_REALM, translateEmoticons: c.translate_emoticons ?? false });
    if (html !== c.expected_output) failing.push(c.name);
  }
  const passed = cases.length - failing.length;
  console.log(`# markdown fixtures: regular ${passed}/${cases.length} pass; failing: ${failing.join(', ') || 'none'}`);
  assert.ok(passed >= REGULAR_FLOOR, `only ${passed} regular cases pass (floor ${REGULAR_FLOOR}): ${failing.join(', ')}`);
});

test('Zulip markdown_test_cases.json: linkify cases', { skip }, () => {
  const failing: string[] = [];
  for (const [input, reference, url] of fixtures!.linkify_tests) {
    // Zulip's expectation: the reference with "%s" replaced by the link for `url`.
    const href = url.startsWith('http') ? url : url.includes('@') ? `mailto:${url}` : `http://${url}`;
    const expected = reference.includes('%s') ? reference.replace('%s', `<a href="${href}">${url}</a>`) : reference;
    if (renderMarkdown(input, ZULIP_TEST_REALM).html !== expected) failing.push(input);
  }
  const cases = fixtures!.linkify_tests.length;
  const passed = cases - failing.length;
  console.log(`# markdown fixtures: linkify ${passed}/${cases} pass; failing: ${failing.join(' | ') || 'none'}`);
  assert.ok(passed >= LINKIFY_FLOOR, `only ${passed} linkify cases pass (floor ${LINKIFY_FLOOR})`);
});

test('no fixture input produces a raw <script> element', { skip }, () => {
  for (const c of fixtures!.regular_tests) {
    const { html } = renderMarkdown(c.input, ZULIP_TEST_REALM);
    assert.doesNotMatch(html, /<script/i, c.name);
  }
});
