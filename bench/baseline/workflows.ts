// The cost baseline's workflows, which the bench's baseline worker bundles: albumflow's album and message
// workflows with one download activity per attachment instead of one per batch of them.
import { albumWorkflowWith } from '../../workflows/album.js';
import { messageWorkflowWith } from '../../workflows/message.js';

const baseline = { attachmentsPerActivity: 1 };

export const albumWorkflow = albumWorkflowWith(baseline);
export const messageWorkflow = messageWorkflowWith(baseline);
