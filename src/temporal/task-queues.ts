/**
 * Live events (webhooks, provider notifications, replays, reminders) run on the configured task
 * queue; bulk runs (`settle import`) on its `-bulk` twin, which every settle worker polls with a few
 * slots of its own (SETTLE_BULK_CONCURRENCY, 2 by default). A worker's slots and its local-activity queue are
 * served in arrival order, whatever the task's priority: only a queue of their own keeps thousands
 * of imported runs from standing in front of a live event inside the worker.
 */
const BULK_SUFFIX = '-bulk';

export function bulkTaskQueue(taskQueue: string): string {
  return `${taskQueue}${BULK_SUFFIX}`;
}

/** Whether a task queue is a bulk twin: its runs' calls downstream yield to live ones. */
export function isBulkTaskQueue(taskQueue: string): boolean {
  return taskQueue.endsWith(BULK_SUFFIX);
}
