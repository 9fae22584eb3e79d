import { badRequest } from '../errors.js';

/**
 * Polls and to-do lists (Zulip's zerver/lib/widget.py): a message whose content starts with
 * `/poll` or `/todo` gets a `widget` submessage describing it; readers then add submessages
 * (votes, options, tasks, strikes) through POST /submessage.
 */

export type WidgetType = 'poll' | 'todo';

export interface WidgetData {
  widget_type: WidgetType;
  extra_data: { question: string; options: string[] } | { task_list_title: string; tasks: { task: string; desc: string }[] };
}

/** A list item's marker ("- ", "* ") and the spaces around it go (Zulip's `re.sub(r"(\s*[-*]?\s*)", "", line, count=1)`). */
const stripMarker = (line: string): string => line.trim().replace(/^\s*[-*]?\s*/, '');

/** Python's str.splitlines: the line breaks it knows, no empty last line. */
function splitLines(s: string): string[] {
  const lines = s.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Zulip's get_widget_data: the widget a message's content asks for, or null. */
export function getWidgetData(content: string): WidgetData | null {
  const first = /^\S*/.exec(content)![0];
  if (first !== '/poll' && first !== '/todo') return null;
  const lines = splitLines(content.replace(first, ''));
  const title = lines.length > 0 && lines[0] ? lines.shift()!.trim() : '';
  const items = lines.map(stripMarker).filter((l) => l.length > 0);
  if (first === '/poll') return { widget_type: 'poll', extra_data: { question: title, options: items } };
  return {
    widget_type: 'todo',
    extra_data: {
      task_list_title: title,
      tasks: items.map((item) => {
        // A task and its description are separated by the first ": ".
        const at = item.indexOf(': ');
        return at < 0 ? { task: item.trim(), desc: '' } : { task: item.slice(0, at).trim(), desc: item.slice(at + 2).trim() };
      }),
    },
  };
}

/** Zulip's MAX_IDX: the largest option or task index a widget event may name. */
const MAX_IDX = 1000;

type Check = (name: string, value: unknown) => void;

// Zulip's validators (zerver/lib/validator.py) with their messages. Python's bool is an int.
const isInt = (v: unknown): v is number | boolean => typeof v === 'boolean' || (typeof v === 'number' && Number.isInteger(v));
const checkString: Check = (name, v) => {
  if (typeof v !== 'string') throw badRequest(`${name} is not a string`);
};
const checkInt: Check = (name, v) => {
  if (!isInt(v)) throw badRequest(`${name} is not an integer`);
};
const checkBool: Check = (name, v) => {
  if (typeof v !== 'boolean') throw badRequest(`${name} is not a boolean`);
};
const checkIntIn =
  (allowed: number[]): Check =>
  (name, v) => {
    checkInt(name, v);
    if (!allowed.includes(Number(v))) throw badRequest(`Invalid ${name}`);
  };
const checkIntRange =
  (low: number, high: number): Check =>
  (name, v) => {
    checkInt(name, v);
    if (Number(v) < low) throw badRequest(`${name} is too small`);
    if (Number(v) > high) throw badRequest(`${name} is too large`);
  };

/** Zulip's check_dict (only the listed keys when `only`). */
function checkDict(name: string, value: unknown, keys: [string, Check][], only: boolean): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
  const data = value as Record<string, unknown>;
  for (const [k, check] of keys) {
    if (!(k in data)) throw badRequest(`${k} key is missing from ${name}`);
    check(`${name}["${k}"]`, data[k]);
  }
  if (only) {
    const extra = Object.keys(data).filter((k) => !keys.some(([known]) => known === k));
    if (extra.length > 0) throw badRequest(`Unexpected arguments: ${extra.join(', ')}`);
  }
}

/** Zulip's validate_poll_data. */
export function validatePollData(data: unknown, isWidgetAuthor: boolean): void {
  checkDict('poll data', data, [['type', checkString]], false);
  switch (data.type) {
    case 'vote':
      return checkDict('poll data', data, [['type', checkString], ['key', checkString], ['vote', checkIntIn([1, -1])]], true);
    case 'question':
      if (!isWidgetAuthor) throw badRequest("You can't edit a question unless you are the author.");
      return checkDict('poll data', data, [['type', checkString], ['question', checkString]], true);
    case 'new_option':
      return checkDict('poll data', data, [['type', checkString], ['option', checkString], ['idx', checkIntRange(0, MAX_IDX)]], true);
    default:
      throw badRequest(`Unknown type for poll data: ${String(data.type)}`);
  }
}

/** Zulip's validate_todo_data. */
export function validateTodoData(data: unknown, isWidgetAuthor: boolean): void {
  checkDict('todo data', data, [['type', checkString]], false);
  switch (data.type) {
    case 'new_task':
      return checkDict('todo data', data, [['type', checkString], ['key', checkIntRange(0, MAX_IDX)], ['task', checkString], ['desc', checkString], ['completed', checkBool]], true);
    case 'strike':
      return checkDict('todo data', data, [['type', checkString], ['key', checkString]], true);
    case 'new_task_list_title':
      if (!isWidgetAuthor) throw badRequest("You can't edit the task list title unless you are the author.");
      return checkDict('todo data', data, [['type', checkString], ['title', checkString]], true);
    default:
      throw badRequest(`Unknown type for todo data: ${String(data.type)}`);
  }
}

/** The widget type a message's `widget` submessage names (Zulip's get_widget_type), or null. */
export function widgetTypeOf(widgetContent: string | undefined): string | null {
  if (widgetContent === undefined) return null;
  try {
    const data = JSON.parse(widgetContent) as { widget_type?: unknown };
    return typeof data.widget_type === 'string' ? data.widget_type : null;
  } catch {
    return null;
  }
}
