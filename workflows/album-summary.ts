// What the Temporal UI shows of an album: the status body's headline fields and a one-line summary,
// computed in time linear in the children (the loop refreshes it after every transition).

import { agreedTotal, canonicalReasons } from '../src/domain/album-metadata.js';
import { latestDecision, reviewRequired, type DecisionRulesState } from './album-rules.js';
import { mediaSummary } from '../src/domain/album-view.js';
import type { AlbumKey, AlbumPhase, DecisionView, MediaSummary, ReviewReason } from '../src/domain/types.js';
import type { UiView } from './temporal-ui.js';

interface AlbumHeadline {
  state: AlbumPhase;
  distinctChildren: number;
  expectedTotal: number | null;
  reviewReasons: ReviewReason[];
  needsReview: boolean;
  latest: DecisionView | undefined;
  media: MediaSummary;
}

function headlineOf(state: DecisionRulesState): AlbumHeadline {
  return {
    state: state.phase,
    distinctChildren: state.children.length,
    expectedTotal: agreedTotal(state.children.map((child) => child.arrival)),
    reviewReasons: canonicalReasons(state.reviewReasons),
    needsReview: reviewRequired(state),
    latest: latestDecision(state),
    media: mediaSummary(state.children.flatMap((child) => child.attachments)),
  };
}

function summarize(headline: AlbumHeadline): string {
  const { media, latest, reviewReasons } = headline;
  const expected = headline.expectedTotal === null ? 'no usable total' : `expected ${headline.expectedTotal}`;
  const review = reviewReasons.length === 0 ? 'no review' : `review${headline.needsReview ? '' : ' resolved'}: ${reviewReasons.join(', ')}`;
  return [
    `**${headline.state}** · ${headline.distinctChildren} children (${expected})`,
    latest ? `decision #${latest.seq} ${latest.trigger}` : 'no decision yet',
    `media ${media.downloaded}/${media.total} downloaded, ${media.pending} pending`,
    review,
  ].join(' · ');
}

export function albumUiView(key: AlbumKey, state: DecisionRulesState): UiView {
  const headline = headlineOf(state);
  return {
    workspace: key.workspace,
    provider: key.provider,
    state: headline.state,
    needsReview: headline.needsReview,
    children: headline.distinctChildren,
    decisions: state.decisions.length,
    details: summarize(headline),
  };
}
