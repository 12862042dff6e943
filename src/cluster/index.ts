/**
 * tickwork on `@effect/cluster`: grains as cluster entities, cluster-wide cron and durable reminders.
 * Imported as `tickwork/cluster`; nothing in the single-process library imports this folder.
 *
 * @since 0.1.0
 */

/**
 * Grain kinds as cluster entities: Schema-typed tell and ask, one activation per identity across runners.
 *
 * @since 0.1.0
 */
export * as ClusterGrain from "./ClusterGrain.js"
/**
 * Runner processes: socket runner, SQLite or PostgreSQL storage, test runners.
 *
 * @since 0.1.0
 */
export * as ClusterRunner from "./ClusterRunner.js"
/**
 * Cluster-wide Quartz cron, once per instant across the runners.
 *
 * @since 0.1.0
 */
export * as ClusterScheduler from "./ClusterScheduler.js"

/**
 * The cluster's crons in the `Schedules` service: list, pause, resume, trigger, update, backfill, remove, history.
 *
 * @since 0.1.0
 */
export * as ClusterSchedules from "./ClusterSchedules.js"

/**
 * Durable reminders: persisted, named self-messages that reactivate a cluster grain when due.
 *
 * @since 0.1.0
 */
export * as Reminders from "./Reminders.js"
