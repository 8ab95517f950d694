// The workflow functions the worker registers; their names are `workflowTypes` of definitions.ts.
export { albumWorkflow } from './album.js';
export { messageWorkflow } from './message.js';
export { erasureWorkflow, retentionWorkflow } from './lifetime.js';
