// What an album's metadata says, whoever reads it (the decision rules, the status views, PostgreSQL's
// review): the order of its children, the total they agree on and the review reasons it gives. Pure.

import type { ChildOrder, ReviewReason } from './types.js';

export const reviewReasonOrder: readonly ReviewReason[] = ['total_conflict', 'duplicate_index', 'invalid_metadata', 'late_item'];

export function canonicalReasons(reasons: Iterable<ReviewReason>): ReviewReason[] {
  const present = new Set(reasons);
  return reviewReasonOrder.filter((reason) => present.has(reason));
}

export interface OrderedChild {
  messageId: string;
  index: number | null;
  sentAt: string | null;
}

function instantOrNull(value: string | null): number | null {
  if (value === null) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

function compareNullsLast(a: number | null, b: number | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a - b;
}

const decimalInteger = /^(0|[1-9][0-9]*)$/;

/** A message id written as a decimal integer (Telegram's message_id), as a number; null for any other id. */
function numericId(messageId: string): number | null {
  return decimalInteger.test(messageId) ? Number(messageId) : null;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const comparators: Record<ChildOrder, (a: OrderedChild, b: OrderedChild) => number> = {
  index: (a, b) =>
    compareNullsLast(a.index, b.index) ||
    compareNullsLast(instantOrNull(a.sentAt), instantOrNull(b.sentAt)) ||
    compareIds(a.messageId, b.messageId),
  message_id: (a, b) =>
    compareNullsLast(numericId(a.messageId), numericId(b.messageId)) ||
    compareNullsLast(instantOrNull(a.sentAt), instantOrNull(b.sentAt)) ||
    compareIds(a.messageId, b.messageId),
};

/**
 * The album order of a profile: `index` — usable index, then sentAt, then message id; `message_id` —
 * message ids as numbers ("9" before "10"), then sentAt. Missing values last.
 */
export function compareChildren(order: ChildOrder): (a: OrderedChild, b: OrderedChild) => number {
  return comparators[order];
}

/** The one total every child that carries a usable total agrees on; null when none or conflicting. */
export function agreedTotal(children: readonly { total: number | null }[]): number | null {
  const totals = distinctTotals(children);
  return totals.length === 1 ? totals[0]! : null;
}

function distinctTotals(children: readonly { total: number | null }[]): number[] {
  return [...new Set(children.flatMap((child) => (child.total === null ? [] : [child.total])))];
}

export interface MetadataAnalysis {
  agreedTotal: number | null;
  reasons: ReviewReason[];
  /** The total the count trigger may use: agreed and free of conflicts, duplicates and invalid metadata. */
  usableTotal: number | null;
}

/** What the metadata rules read of a child: its usable index and total, and whether its metadata was invalid. */
export interface ChildMetadata {
  index: number | null;
  total: number | null;
  metadataInvalid: boolean;
}

/** The review reasons an album's metadata gives (PostgreSQL's view derives them with this too) and the total the count trigger may use. */
export function analyzeMetadata(children: readonly ChildMetadata[]): MetadataAnalysis {
  const total = agreedTotal(children);
  const reasons: ReviewReason[] = [];
  if (distinctTotals(children).length > 1 || (total !== null && children.length > total)) reasons.push('total_conflict');
  const indexes = children.flatMap((child) => (child.index === null ? [] : [child.index]));
  if (new Set(indexes).size < indexes.length) reasons.push('duplicate_index');
  if (children.some((child) => child.metadataInvalid)) reasons.push('invalid_metadata');
  return { agreedTotal: total, reasons, usableTotal: reasons.length === 0 ? total : null };
}
