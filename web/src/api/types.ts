/** The server's shapes as the web app reads them (zulip.yaml names). */

export interface Reaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

export interface Message {
  id: number;
  sender_id: number;
  sender_full_name: string;
  sender_email: string;
  avatar_url: string | null;
  timestamp: number;
  content: string;
  type: 'stream' | 'private';
  stream_id?: number;
  subject: string;
  display_recipient: string | { id: number; email: string; full_name: string }[];
  flags: string[];
  reactions: Reaction[];
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
  match_content?: string;
  match_subject?: string;
  /** Client side only: a message shown before the server confirmed it. */
  local_id?: string;
  failed?: boolean;
}

export interface Subscription {
  stream_id: number;
  name: string;
  description: string;
  color: string;
  is_muted: boolean;
  invite_only: boolean;
  pin_to_top?: boolean;
}

export interface User {
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
  is_bot: boolean;
  is_active: boolean;
  role: number;
  timezone?: string;
}

export interface Topic {
  name: string;
  max_id: number;
}

export interface Draft {
  id?: number;
  type: 'stream' | 'private' | '';
  to: number[];
  topic: string;
  content: string;
  timestamp: number;
}

export type ServerEvent = { type: string; id: number; op?: string } & Record<string, any>;
