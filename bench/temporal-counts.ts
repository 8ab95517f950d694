// What a workflow costs Temporal, counted from its history: figures no noisy machine can blur, and the
// billable actions Temporal Cloud would charge for them. Pure (no I/O).
//
// The billable-action mapping follows Temporal's "Temporal Cloud Actions" page (docs.temporal.io/cloud/actions,
// as restructured by temporalio/documentation#4450), which lists the history event
// behind each action:
// - a workflow started (client start, continue-as-new, the start of a signal-with-start): 1;
// - a signal: 1, except the one a signal-with-start delivers with the start it made (one action for both);
// - an activity scheduled: 1, and each retry (the started event's attempt − 1): 1;
// - local activities: the markers one workflow task records count 1 together, plus each local-activity
//   attempt after the first (the completed task's metering metadata);
// - a timer started: 1; a search-attribute upsert: 1, unless it sets only TemporalChangeVersion (exempt);
// - an update accepted, the options updated, a reset, a Nexus operation scheduled or cancelled: 1 each;
//   a child workflow initiated: 2 (the intent and the start).
// Not in a history, so not counted here: activity heartbeats that reach the server, queries, rejected
// updates, and workflow-task heartbeats of a long local activity.
import proto from '@temporalio/proto';

// A CommonJS module: its namespaces are read from the default export under Node's ESM loader.
const { EventType, WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;
type History = proto.temporal.api.history.v1.IHistory;

/** Counts of one workflow run, or a sum of them. */
export interface TemporalCounts {
  /** Workflow tasks a worker was handed (started events). */
  workflowTasks: number;
  historyEvents: number;
  signals: number;
  timersStarted: number;
  /** Regular activities scheduled. */
  activities: number;
  /** Local activities run (their marker events). */
  localActivities: number;
  /** Search-attribute upserts, those that set only TemporalChangeVersion (a patch's) left out. */
  searchAttributeUpserts: number;
  /** Temporal Cloud billable actions, by the mapping above. */
  billableActions: number;
}

export const noCounts: TemporalCounts = {
  workflowTasks: 0,
  historyEvents: 0,
  signals: 0,
  timersStarted: 0,
  activities: 0,
  localActivities: 0,
  searchAttributeUpserts: 0,
  billableActions: 0,
};

/** The marker the TypeScript SDK records for each local activity. */
const localActivityMarker = 'core_local_activity';
const changeVersionAttribute = 'TemporalChangeVersion';

export function addCounts(a: TemporalCounts, b: TemporalCounts): TemporalCounts {
  const sum = { ...a };
  for (const key of Object.keys(sum) as Array<keyof TemporalCounts>) sum[key] += b[key];
  return sum;
}

/** Counts one run's history. */
export function countHistory(history: History): TemporalCounts {
  const events = history.events ?? [];
  const counts: TemporalCounts = { ...noCounts, historyEvents: events.length };
  /** Workflow tasks (by their completed event) that recorded at least one marker. */
  const tasksWithMarkers = new Set<string>();
  let actions = 0;
  events.forEach((event, index) => {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        actions += 1;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: {
        counts.signals += 1;
        const previous = events[index - 1];
        const deliveredWithStart = index === 1 && previous?.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED;
        if (!deliveredWithStart) actions += 1;
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        counts.workflowTasks += 1;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        actions += event.workflowTaskCompletedEventAttributes?.meteringMetadata?.nonfirstLocalActivityExecutionAttempts ?? 0;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
        if (event.workflowTaskFailedEventAttributes?.cause === WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW) {
          actions += 1;
        }
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        counts.activities += 1;
        actions += 1;
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        actions += Math.max(0, (event.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED: {
        const marker = event.markerRecordedEventAttributes;
        if (marker?.markerName === localActivityMarker) counts.localActivities += 1;
        tasksWithMarkers.add(String(marker?.workflowTaskCompletedEventId ?? event.eventId));
        break;
      }
      case EventType.EVENT_TYPE_TIMER_STARTED:
        counts.timersStarted += 1;
        actions += 1;
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const fields = Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
        if (fields.some((field) => field !== changeVersionAttribute)) {
          counts.searchAttributeUpserts += 1;
          actions += 1;
        }
        break;
      }
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        actions += 2;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
      case EventType.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
      case EventType.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
        actions += 1;
        break;
      default:
        break;
    }
  });
  counts.billableActions = actions + tasksWithMarkers.size;
  return counts;
}

/** What one phase's workflows cost Temporal: in all, per album and per photo. */
export interface PhaseCounts {
  phase: string;
  albums: number;
  /** New children of the phase, one attachment each. */
  photos: number;
  /** Runs counted (more than the albums when one continued as new). */
  runs: number;
  total: TemporalCounts;
  perAlbum: TemporalCounts;
  perPhoto: TemporalCounts;
}
