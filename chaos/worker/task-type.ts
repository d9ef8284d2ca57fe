/** The task type every chaos workload job runs (the chaos worker subscribes to exactly this). */
export const CHAOS_TASK_TYPE = 'chaos';
